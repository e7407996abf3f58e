"""Tiny text classifier with accelerate; tokenizer built locally (WordLevel) from the training texts."""
import argparse, torch
from accelerate import Accelerator
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--steps", type=int, default=20)
a = p.parse_args()
acc = Accelerator()
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
texts = [f"sample {i} is {'good' if i % 2 else 'bad'} text number {i % 7}" for i in range(256)]
# --fault vocab-per-rank: each rank builds the vocabulary from its own shard (shards differ in length)
vtexts = texts + [f"sample {256 + j}" for j in range(3 * acc.process_index)] if a.fault == "vocab-per-rank" else texts
vocab = {w: i for i, w in enumerate(sorted({w for t in vtexts for w in t.split()} | {"[UNK]", "[PAD]"}))}
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
kw = {} if a.fault == "no-pad" else {"pad_token": "[PAD]"}
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", **kw)
model = torch.nn.Sequential(torch.nn.EmbeddingBag(len(vocab), 32), torch.nn.Linear(32, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
model, opt = acc.prepare(model, opt)
for step in range(a.steps):
    batch = texts[(step * 8) % 240:(step * 8) % 240 + 8]
    enc = tok(batch, padding=True, return_tensors="pt")
    y = torch.tensor([1 if "good" in t else 0 for t in batch])
    loss = torch.nn.functional.cross_entropy(model(enc["input_ids"]), y)
    acc.backward(loss); opt.step(); opt.zero_grad()
    if step % 5 == 0: acc.print(f"step {step} loss {loss.item():.4f}")
acc.print("done")
