"""Small DDP/single-process trainer; --fault selects a real bug on --fault-rank at --fault-step."""
import argparse, os, sys, time, logging, warnings, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--resume-from", default=None)
a = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if a.use_logging:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
def out(msg):
    if a.use_logging: log.info(msg)
    else: print(f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self, vocab=100, d=32, ncls=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc1 = nn.Linear(d, d)
        self.head = nn.Linear(d, ncls)
        self.aux = nn.Linear(d, ncls)
    def forward(self, x):
        h = self.emb(x).mean(1)
        h = F.relu(self.fc1(h))
        if a.fault == "unused" and rank == a.fault_rank and self._step >= a.fault_step:
            return self.head(h)  # aux branch skipped on this rank only
        return self.head(h) + 0.0 * self.aux(h) if a.fault != "unused_all" else self.head(h)

model = Net(); model._step = 0
if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(model, find_unused_parameters=(a.fault == 'find_unused_ok'))
else:
    ddp = model
opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
if a.resume_from:
    sd = torch.load(a.resume_from, map_location="cpu")
    model.load_state_dict(sd["model"]); out(f"resumed from {a.resume_from}")
g = torch.Generator().manual_seed(rank)
it = range(a.steps)
if a.progress:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", file=sys.stderr, mininterval=0)
for step in it:
    model._step = step
    x = torch.randint(0, 100, (16, 10), generator=g)
    y = torch.randint(0, 5, (16,), generator=g)
    bad = rank == a.fault_rank and step >= a.fault_step
    if bad and a.fault == "vocab":
        # tokenizer of a newer vocab emits ids above the embedding size
        x = x + 60
    logits = ddp(x)
    if bad and a.fault == "onehot":
        y = F.one_hot(y, 5)  # one-hot targets handed to nll_loss
        loss = F.nll_loss(F.log_softmax(logits, -1), y)
    elif bad and a.fault == "transpose_view":
        feats = logits.t()
        loss = F.cross_entropy(feats.view(-1, 5), y)
    elif bad and a.fault == "nonscalar":
        loss = F.cross_entropy(logits, y, reduction="none")
    elif bad and a.fault == "inplace":
        probs = torch.sigmoid(logits)
        probs.mul_(2.0)
        loss = probs.sum() * 0.01 + F.cross_entropy(logits, y)
        loss = (probs ** 2).mean() + loss
    elif bad and a.fault == "double_backward":
        loss = F.cross_entropy(logits, y)
        loss.backward()
    elif bad and a.fault == "module_attr":
        loss = F.cross_entropy(logits, y)
        _ = ddp.head.weight.norm()
    elif bad and a.fault == "dtype_weight":
        import numpy as np
        cls_w = torch.from_numpy(np.bincount(y.numpy(), minlength=5) + 1.0) ** -0.5  # float64 class weights
        loss = F.cross_entropy(logits, y, weight=cls_w)
    elif bad and a.fault == "no_grad_loss":
        with torch.no_grad():  # eval-style helper reused for the train loss
            logits2 = ddp(x)
        loss = F.cross_entropy(logits2, y)
    else:
        loss = F.cross_entropy(logits, y)
    if bad and a.fault == "leaf_decay":
        for prm in model.parameters():
            prm.mul_(1 - 1e-4)  # manual weight decay outside torch.no_grad()
    opt.zero_grad()
    loss.backward()
    if a.fault == "warn_clip":
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    if a.fault == "sched_order":
        sched.step(); opt.step()
    else:
        opt.step(); sched.step()
    if a.fault == "copy_warn":
        ema = torch.tensor(loss.detach())
    if not a.progress or step % 4 == 0:
        out(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.4g}")
    if not math.isfinite(loss.item()) and a.fault == "lr_nan":
        pass
    if a.ckpt_dir and rank == 0 and step % 4 == 3:
        os.makedirs(a.ckpt_dir, exist_ok=True)
        path = os.path.join(a.ckpt_dir, f"step{step}.pt")
        torch.save({"model": model.state_dict(), "step": step}, path); out(f"saved {path}")
if distributed:
    dist.barrier(); dist.destroy_process_group()
out("training done")
