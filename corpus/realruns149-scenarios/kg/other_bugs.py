"""Library/user bugs outside the usual classes: --fault onecycle|autograd_fn|autograd_shape|metric|sklearn_metric|none"""
import argparse, os, sys, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps-per-epoch", type=int, default=4)
a = p.parse_args()
distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
else:
    rank = 0
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [r{rank}] %(message)s")
log = logging.getLogger("trainer")

class ScaledGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x, scale)
        return F.gelu(x) * scale
    @staticmethod
    def backward(ctx, gout):
        x, scale = ctx.saved_tensors
        cdf = 0.5 * (1 + torch.erf(x / 2 ** 0.5))
        pdf = torch.exp(-0.5 * x * x) / (2 * torch.pi) ** 0.5
        gx = gout * scale * (cdf + x * pdf)
        if a.fault == "autograd_fn" and rank == a.fault_rank:
            return gx  # forgot the gradient for `scale`
        gs = (gout * F.gelu(x)).sum().reshape(scale.shape)
        if a.fault == "autograd_shape" and rank == a.fault_rank:
            return gx.t(), gs  # returned the transposed layout of the custom op
        return gx, gs

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(16, 24); self.scale = nn.Parameter(torch.ones(1)); self.l2 = nn.Linear(24, 3)
    def forward(self, x):
        return self.l2(ScaledGelu.apply(self.l1(x), self.scale))

torch.manual_seed(0)
model = Net()
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
total = a.steps_per_epoch * a.epochs
if a.fault == "onecycle" and rank == a.fault_rank:
    # config bug: total_steps computed from epochs-1 (off by one epoch) on this rank's config copy
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, epochs=a.epochs - 1, steps_per_epoch=a.steps_per_epoch)
else:
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=total + 1)
g = torch.Generator().manual_seed(rank)
if a.fault in ("metric", "none", "metric_ncls"):
    import torchmetrics
    # metric_ncls: metric built from a stale config (binary task) while the head has 3 classes
    acc = torchmetrics.classification.MulticlassAccuracy(num_classes=2 if a.fault == "metric_ncls" else 3)
for ep in range(a.epochs):
    for s in range(a.steps_per_epoch):
        x = torch.randn(8, 16, generator=g); y = torch.randint(0, 3, (8,), generator=g)
        logits = model(x); loss = F.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        log.info("epoch %d step %d loss %.4f lr %.3e", ep, s, loss.item(), sched.get_last_lr()[0])
        if a.fault in ("metric", "none", "metric_ncls"):
            preds = logits.argmax(-1)
            if a.fault == "metric" and rank == a.fault_rank and ep == 1:
                preds = logits.softmax(-1).max(-1).values  # passed confidences instead of class ids
            acc.update(preds, y)
    if a.fault == "sklearn_metric":
        from sklearn.metrics import f1_score
        with torch.no_grad():
            xv = torch.randn(32, 16, generator=g); yv = torch.randint(0, 3, (32,), generator=g)
            pv = model(xv).softmax(-1)
            pred = pv.argmax(-1).numpy() if not (rank == a.fault_rank and ep == 1) else pv[:, 1].numpy()
        log.info("epoch %d val f1 %.4f", ep, f1_score(yv.numpy(), pred, average="macro"))
    if a.fault in ("metric", "none", "metric_ncls"):
        log.info("epoch %d train acc %.4f", ep, acc.compute().item()); acc.reset()
if distributed:
    dist.barrier(); dist.destroy_process_group()
log.info("finished %d epochs", a.epochs)
