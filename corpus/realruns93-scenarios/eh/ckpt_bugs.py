"""Checkpoint save/resume bugs in a small training loop.
--fault safetensors_tied : export state_dict of a weight-tied LM with safetensors.torch.save_file
--fault optim_resume     : resume optimizer state after the model gained a layer (bias-free head -> with bias)"""
import argparse, os, logging
import torch, torch.nn as nn
p = argparse.ArgumentParser(); p.add_argument("--fault", default="safetensors_tied"); p.add_argument("--out", default="/tmp/eh_ckpt_bugs")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(message)s")
log = logging.getLogger()
os.makedirs(args.out, exist_ok=True)

class TiedLM(nn.Module):
    def __init__(self, V=64, d=32, head_bias=False):
        super().__init__()
        self.wte = nn.Embedding(V, d); self.ff = nn.Linear(d, d)
        self.lm_head = nn.Linear(d, V, bias=head_bias)
        self.lm_head.weight = self.wte.weight   # weight tying
    def forward(self, x):
        return self.lm_head(torch.tanh(self.ff(self.wte(x))))

def train(model, opt, steps, start=0):
    for s in range(start, start + steps):
        x = torch.randint(0, 64, (8, 12))
        loss = nn.functional.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d loss %.4f", s, loss.item())

torch.manual_seed(0)
if args.fault == "safetensors_tied":
    from safetensors.torch import save_file
    m = TiedLM(); opt = torch.optim.AdamW(m.parameters(), 1e-3)
    train(m, opt, 5)
    path = os.path.join(args.out, "model.safetensors")
    log.info("exporting weights to %s", path)
    save_file(m.state_dict(), path)
else:
    m = TiedLM(); opt = torch.optim.AdamW(m.parameters(), 1e-3)
    train(m, opt, 4)
    torch.save({"model": m.state_dict(), "optim": opt.state_dict(), "step": 4}, os.path.join(args.out, "last.pt"))
    log.info("saved checkpoint at step 4; restarting with head_bias=True (config change)")
    m2 = TiedLM(head_bias=True); opt2 = torch.optim.AdamW(m2.parameters(), 1e-3)
    ck = torch.load(os.path.join(args.out, "last.pt"))
    m2.load_state_dict(ck["model"], strict=False)
    opt2.load_state_dict(ck["optim"])
    train(m2, opt2, 4, start=ck["step"])
