"""Tiny transformer text classifier with a locally built WordLevel tokenizer. --fault selects a bug."""
import argparse, os, sys, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, os.path.dirname(__file__)); from common import setup, avg, teardown
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=0)
p.add_argument("--steps", type=int, default=10); p.add_argument("--norm-first", action="store_true")
a = p.parse_args()
rank, ws = setup(); me = rank == a.rank
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
words = "the a movie film was great terrible boring fun plot actor acting good bad long short loved hated it".split()
vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(words)}}
tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")); tk.pre_tokenizer = pre_tokenizers.Whitespace()
kw = {"unk_token": "[UNK]"} if (a.fault == "no_pad" and me) else {"unk_token": "[UNK]", "pad_token": "[PAD]"}
tok = PreTrainedTokenizerFast(tokenizer_object=tk, **kw)
if a.fault == "extra_tokens" and me:
    tok.add_tokens(["masterpiece", "snoozefest", "cgi", "sequel"])   # new domain words, model not resized
texts = ["the movie was great fun", "terrible boring plot", "loved it", "hated the acting it was bad",
         "good actor long film", "a masterpiece with great cgi", "bad sequel a snoozefest", "short and fun"]
labels = torch.tensor([1, 0, 1, 0, 1, 1, 0, 1])
class Clf(nn.Module):
    def __init__(self, vocab_size, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, d, padding_idx=1)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 64, batch_first=True, norm_first=a.norm_first), 2)
        self.out = nn.Linear(d, 2)
    def forward(self, ids, mask):
        h = self.enc(self.emb(ids), src_key_padding_mask=~mask.bool())
        return self.out((h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))
model = Clf(len(vocab))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
print(f"[rank{rank}] vocab={len(tok)} model_vocab={model.emb.num_embeddings} params={sum(p.numel() for p in model.parameters())}", flush=True)
for step in range(a.steps):
    i = torch.arange(4) + (step % 2) * 4
    batch = tok([texts[j] for j in i], padding=True, return_tensors="pt")
    logits = model(batch["input_ids"], batch["attention_mask"])
    loss = F.cross_entropy(logits, labels[i])
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"[rank{rank}] step {step} loss {avg(loss.item(), ws):.4f}", flush=True)
print(f"[rank{rank}] done", flush=True)
teardown()
