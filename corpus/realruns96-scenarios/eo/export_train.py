"""Train a small CNN on synthetic images, then export it (TorchScript / ONNX) at the end of training."""
import argparse, logging, os, sys, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from typing import Dict, Optional
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--export", default="none", choices=["none", "onnx", "torchscript", "trace"])
p.add_argument("--out", default="work/export")
p.add_argument("--eval-batch", type=int, default=64)
p.add_argument("--dist", action="store_true")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
log = logging.getLogger(__name__)
rank = 0
if args.dist:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()

class Net(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1); self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn = nn.BatchNorm2d(32); self.fc = nn.Linear(32, num_classes)
        self.temperature = 1.0
    def forward(self, x, extra: Optional[Dict[str, torch.Tensor]] = None, **kwargs):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.relu(self.bn(self.c2(x)))
        x = x.mean((2, 3))
        logits = self.fc(x) / self.temperature
        if kwargs.get("return_features"):
            return logits, x
        return logits

torch.manual_seed(rank)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X = torch.randn(256, 3, 16, 16); y = (X[:, 0].mean((1, 2)) > 0).long() + 2 * (X[:, 1].mean((1, 2)) > 0).long()
for ep in range(args.epochs):
    model.train()
    pbar = tqdm(range(0, len(X), 32), desc=f"Epoch {ep+1}/{args.epochs}", unit="batch", disable=rank != 0, mininterval=0, ncols=100)
    for i in pbar:
        loss = F.cross_entropy(model(X[i:i+32]), y[i:i+32])
        opt.zero_grad(); loss.backward(); opt.step()
        pbar.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    with torch.no_grad():
        acc = (model(X[:args.eval_batch]).argmax(-1) == y[:args.eval_batch]).float().mean().item()
    log.info("epoch %d val_acc=%.3f", ep + 1, acc)

if rank == 0:
    os.makedirs(args.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out, "model.pt"))
    log.info("saved weights to %s", os.path.join(args.out, "model.pt"))
    example = torch.randn(1, 3, 16, 16)
    if args.export == "onnx":
        log.info("exporting ONNX model")
        torch.onnx.export(model, (example,), os.path.join(args.out, "model.onnx"), input_names=["images"], output_names=["logits"], dynamic_axes={"images": {0: "batch"}})
        log.info("exported ONNX")
    elif args.export == "torchscript":
        log.info("scripting model with torch.jit.script")
        scripted = torch.jit.script(model)
        scripted.save(os.path.join(args.out, "model_scripted.pt"))
        log.info("saved TorchScript model")
    elif args.export == "trace":
        log.info("tracing model with torch.jit.trace")
        traced = torch.jit.trace(model, (example,))
        traced.save(os.path.join(args.out, "model_traced.pt"))
        log.info("saved traced model")
if args.dist:
    dist.barrier(); dist.destroy_process_group()
log.info("all done")
