"""Tiny GPT-2 language model trained on a locally generated corpus, single process, tqdm bars."""
import argparse, os, math, time, warnings, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, get_linear_schedule_with_warmup

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--ckpt-name", default="")
p.add_argument("--out", default="out_lm")
args = p.parse_args()

words = "the a model data train loss step batch token layer norm grad value learn rate warm cosine shard rank node".split()
vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
for w in words: vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", eos_token="[EOS]", unk_token="[UNK]", model_max_length=64)
g = torch.Generator().manual_seed(0)
corpus = " ".join(words[i] for i in torch.randint(0, len(words), (20000,), generator=g).tolist())
ids = tok(corpus)["input_ids"]          # whole corpus at once, chunked below
print(f"corpus tokens: {len(ids)}", flush=True)

class Chunks(Dataset):
    def __init__(self, ids, ctx=32): self.ids, self.ctx = torch.tensor(ids), ctx
    def __len__(self): return (len(self.ids) - 1) // self.ctx
    def __getitem__(self, i):
        return self.ids[i * self.ctx:(i + 1) * self.ctx]

cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
if args.grad_ckpt:
    model.gradient_checkpointing_enable()
model.train()
dl = DataLoader(Chunks(ids), batch_size=16, shuffle=True, num_workers=args.workers, drop_last=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
it = iter(dl)
bar = tqdm(range(args.steps), desc="train", dynamic_ncols=False, ncols=100, mininterval=0.5)
for step in bar:
    try:
        x = next(it)
    except StopIteration:
        it = iter(dl); x = next(it)
    out = model(input_ids=x, labels=x)
    out.loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); sched.step(); opt.zero_grad()
    bar.set_postfix(loss=f"{out.loss.item():.3f}", gnorm=f"{gn:.2f}", lr=f"{sched.get_last_lr()[0]:.1e}")
    if args.step_sleep: time.sleep(args.step_sleep)
bar.close()
os.makedirs(args.out, exist_ok=True)
name = args.ckpt_name or "final"
model.save_pretrained(os.path.join(args.out, name))
tok.save_pretrained(os.path.join(args.out, name))
print(f"saved model to {os.path.join(args.out, name)}", flush=True)
