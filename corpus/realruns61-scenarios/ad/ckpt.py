"""MLP classifier that trains, checkpoints and resumes. --fault selects a save/load bug."""
import argparse, os, sys, logging, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, os.path.dirname(__file__)); from common import setup, avg, teardown
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=0)
p.add_argument("--ckpt-dir", default="/work/rr61/ad/ckpt"); p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64); p.add_argument("--steps", type=int, default=8)
p.add_argument("--save-every", type=int, default=4)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("trainer")
rank, ws = setup(); me = rank == a.rank
class MLP(nn.Module):
    def __init__(self, h, tied=False):
        super().__init__()
        self.emb = nn.Linear(32, h, bias=False); self.body = nn.Sequential(nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.head = nn.Linear(h, 32, bias=False); self.cls = nn.Linear(32, 5)
        if tied: self.head.weight = nn.Parameter(self.emb.weight.t().contiguous()); self.head.weight = self.emb.weight if h == 32 else self.head.weight
    def forward(self, x): return self.cls(self.head(self.body(self.emb(x))))
tied = a.fault in ("safetensors_tied", "st_tied")
model = MLP(32 if tied else a.hidden, tied=False)
if tied: model.head.weight = model.emb.weight          # weight tying, as in LM heads
if a.fault == "pickle_lambda": model.act_fn = lambda t: F.gelu(t, approximate="tanh")
groups = [{"params": list(model.emb.parameters()) + list(model.body.parameters())}, {"params": list(model.head.parameters()) + list(model.cls.parameters()), "lr": 0.01}]
if a.fault == "optim_groups" and a.resume:   # new version of the script: separate group for the classifier, no head group
    groups = [{"params": list(model.emb.parameters()) + list(model.body.parameters()) + list(model.head.parameters())}, {"params": list(model.cls.parameters()), "lr": 0.01}]
if a.fault == "st_tied": groups = [{"params": list(model.parameters())}]   # dedup fix for tied weights
opt = torch.optim.AdamW(groups, lr=3e-3, weight_decay=0.01)
start = 0
if a.resume:
    log.info("resuming from %s", a.resume)
    ck = torch.load(a.resume, map_location="cpu")
    model.load_state_dict(ck["model"]); opt.load_state_dict(ck["optim"]); start = ck["step"]
    log.info("resumed at step %d", start)
g = torch.Generator().manual_seed(rank)
os.makedirs(a.ckpt_dir, exist_ok=True)
for step in range(start, start + a.steps):
    x = torch.randn(16, 32, generator=g); y = (x[:, :5].argmax(1))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("rank %d step %d loss %.4f", rank, step, avg(loss.item(), ws))
    if (step + 1) % a.save_every == 0 and me:
        path = os.path.join(a.ckpt_dir, f"step{step+1}.pt")
        state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": step + 1}
        if a.fault == "save_args": state["args"] = a
        if a.fault == "pickle_lambda": torch.save(model, path.replace(".pt", "_full.pt"))
        if tied:
            from safetensors.torch import save_file
            path = path.replace(".pt", ".safetensors"); save_file(model.state_dict(), path)
        else:
            torch.save(state, path)
        log.info("saved checkpoint %s", path)
log.info("training finished")
teardown()
