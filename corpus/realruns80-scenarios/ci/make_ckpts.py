"""Build the baseline checkpoints used by the ddp_lm 'baseline' scenarios (run once, single process)."""
import argparse, os, shutil, torch, torch.nn as nn
from transformers import GPT2Config, GPT2LMHeadModel
out = "/work/rr80/ci/ckpts"
os.makedirs(out, exist_ok=True)

class LM(nn.Module):
    def __init__(self, n_layer=2, n_embd=64):
        super().__init__()
        self.gpt = GPT2LMHeadModel(GPT2Config(vocab_size=500, n_positions=64, n_embd=n_embd, n_layer=n_layer, n_head=4))
        self.aux = nn.Linear(n_embd, 2)

m = LM()
opt = torch.optim.AdamW(m.parameters())
good = {"model": m.state_dict(), "opt": opt.state_dict(), "step": 4000}
torch.save(good, f"{out}/best_ok.pt")
# 1) copy to the shared filesystem was interrupted (partial file)
raw = open(f"{out}/best_ok.pt", "rb").read()
open(f"{out}/best_partial.pt", "wb").write(raw[: len(raw) * 3 // 5])
# 2) older training code stored its argparse namespace in the checkpoint
torch.save({"model": m.state_dict(), "step": 4000,
            "args": argparse.Namespace(lr=3e-4, n_layer=2, n_embd=64, data="/data/lm")}, f"{out}/best_with_args.pt")
# 3) baseline from the 3-layer / tied-aux experiment
m3 = LM(n_layer=3)
torch.save({"model": m3.state_dict(), "step": 6000}, f"{out}/best_3layer.pt")
for f in sorted(os.listdir(out)):
    print(f, os.path.getsize(os.path.join(out, f)))
