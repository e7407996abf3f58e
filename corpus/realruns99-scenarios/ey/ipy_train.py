"""Family: training script run with `ipython script.py` (IPython traceback format).
Usage: ipython ipy_train.py -- --fault {none,ddp-prefix,weights-only,interrupt,backward-twice,alloc} [--step N]"""
import argparse, os, sys, time, logging, warnings, dataclasses
import torch, torch.nn as nn, torch.nn.functional as F
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60); p.add_argument("--ckpt", default="ckpt/ipy_model.pt")
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")

@dataclasses.dataclass
class RunConfig:
    lr: float = 1e-3
    hidden: int = 64
    seq_len: int = 32

class Net(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, cfg.hidden))
        self.head = nn.Linear(cfg.hidden, 3)
    def forward(self, x): return self.head(self.encoder(x))

cfg = RunConfig()
torch.manual_seed(0)
model = Net(cfg)
opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)

if a.fault == "ddp-prefix":
    # checkpoint written by the multi-GPU job: it saved model.state_dict() of the DDP wrapper
    from torch.nn.parallel import DistributedDataParallel  # noqa
    wrapped = nn.ModuleDict({"module": Net(cfg)})
    torch.save({"model": wrapped.state_dict(), "epoch": 7}, a.ckpt)
    log.info("resuming from %s", a.ckpt)
    state = torch.load(a.ckpt, map_location="cpu")
    model.load_state_dict(state["model"])
if a.fault == "weights-only":
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "cfg": cfg, "step": 120}, a.ckpt)
    log.info("resuming from %s", a.ckpt)
    state = torch.load(a.ckpt, map_location="cpu")
    model.load_state_dict(state["model"])

if a.fault == "none":
    scaler = torch.cuda.amp.GradScaler()            # left over from the GPU version of the script
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=a.steps + 1)
    sched.step()                                     # stepped before the first optimizer.step()
    x_np = torch.randn(3, requires_grad=True)
    torch.tensor(x_np)                               # copy-construct warning

X = torch.randn(4096, 16); y = (X[:, 0] > 0).long() + (X[:, 1] > 1).long()
hist = []
for step in tqdm(range(a.steps), desc="train", mininterval=2, file=sys.stdout):
    idx = torch.randint(0, len(X), (64,))
    xb, yb = X[idx], y[idx]
    if a.fault == "interrupt":
        time.sleep(0.4)
    if a.fault == "alloc" and step == a.step:
        # "quick" pairwise similarity over the whole dataset for hard-negative mining
        emb = model.encoder(X.repeat(64, 1))
        sim = emb @ emb.T
        log.info("sim %s", sim.shape)
    logits = model(xb)
    loss = F.cross_entropy(logits, yb)
    if a.fault == "backward-twice" and step >= a.step:
        reg = 1e-4 * sum((p ** 2).sum() for p in model.parameters())
        total = loss + reg
        total.backward()
        hist.append(total)
        if len(hist) > 1:
            (hist[-2] * 0.1).backward()   # smooth with the previous step's loss
        opt.step(); opt.zero_grad()
        continue
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 10 == 0:
        log.info("step %d loss %.4f", step, loss.item())
torch.save(model.state_dict(), a.ckpt)
log.info("saved %s", a.ckpt)
