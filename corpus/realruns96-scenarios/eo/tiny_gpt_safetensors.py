"""Tiny GPT-2 (from config, offline) trained on a char corpus, weights exported with safetensors."""
import argparse, logging, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from safetensors.torch import save_file

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="work/gpt_st")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("tiny_gpt")
text = ("the quick brown fox jumps over the lazy dog. " * 200)
vocab = sorted(set(text)); stoi = {c: i for i, c in enumerate(vocab)}
data = torch.tensor([stoi[c] for c in text])
cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(args.steps):
    ix = torch.randint(0, len(data) - 33, (8,))
    x = torch.stack([data[i:i + 32] for i in ix])
    out = model(input_ids=x, labels=x)
    out.loss.backward(); opt.step(); opt.zero_grad()
    if step % 5 == 0:
        log.info("step %d loss %.4f", step, out.loss.item())
os.makedirs(args.out, exist_ok=True)
path = os.path.join(args.out, "model.safetensors")
log.info("writing %s", path)
save_file(model.state_dict(), path, metadata={"format": "pt"})
log.info("done")
