"""Lightning Fabric training loop scenarios (CPU, gloo)."""
import argparse, os, sys, time, logging, dataclasses, warnings
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader
import lightning as L
from lightning.fabric.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--spawn", action="store_true")
p.add_argument("--datadir", default="runs/fabric_data")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--init-from", default=None)
p.add_argument("--outdir", default="runs/fabric_out")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")


@dataclasses.dataclass
class ModelConfig:
    d_in: int = 16
    hidden: int = 64


class NpyDir(Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".npy"))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        a = np.load(self.files[i])
        return torch.from_numpy(a[:-1]).float(), torch.tensor(a[-1]).float()


def make_data(d, n=96, corrupt=None):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        np.save(os.path.join(d, f"s{i:04d}.npy"), rng.normal(size=17).astype(np.float32))
    if corrupt is not None:
        fn = os.path.join(d, f"s{corrupt:04d}.npy")
        raw = open(fn, "rb").read()
        open(fn, "wb").write(raw[:90])  # partial sync from the data bucket


def build(cfg):
    return nn.Sequential(nn.Linear(cfg.d_in, cfg.hidden), nn.GELU(), nn.Linear(cfg.hidden, 1))


def run(fabric):
    rank = fabric.global_rank
    cfg = ModelConfig()
    model = build(cfg)
    if args.init_from:
        ck = torch.load(args.init_from, map_location="cpu")
        model.load_state_dict(ck["model"])
        log.info("initialised from %s (cfg=%s)", args.init_from, ck.get("config"))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model, opt = fabric.setup(model, opt)
    ds = NpyDir(args.datadir)
    dl = fabric.setup_dataloaders(DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers))
    step = 0
    t0 = time.time()
    while step < args.steps:
        for x, y in dl:
            out = model(x).squeeze(-1)
            if args.fault == "nonscalar" and rank == args.fault_rank and step >= 7:
                loss = nn.functional.mse_loss(out, y, reduction="none")  # per-sample loss for hard-example mining
            else:
                loss = nn.functional.mse_loss(out, y)
            if args.fault == "warn" and step == 3:
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Failure to do this will result in PyTorch skipping the first value of the learning rate schedule.")
            fabric.backward(loss)
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if args.fault == "warn" and gn > 1.0:
                log.warning("rank %d step %d: grad norm %.2f clipped to 1.0", rank, step, gn)
            opt.step(); opt.zero_grad()
            if step % 5 == 0:
                lv = fabric.all_reduce(loss.detach(), reduce_op="mean")
                fabric.print(f"step {step} loss {lv.item():.4f} ({(time.time()-t0):.1f}s)")
            step += 1
            if step >= args.steps:
                break
    os.makedirs(args.outdir, exist_ok=True)
    if fabric.global_rank == 0:
        torch.save({"model": model.module.state_dict() if hasattr(model, "module") else model.state_dict(),
                    "config": cfg, "step": step}, os.path.join(args.outdir, "final.pt"))
    fabric.barrier()
    fabric.print("done, saved", os.path.join(args.outdir, "final.pt"))


def main():
    if args.devices > 1:
        strat = "ddp_spawn" if args.spawn else DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strat = "auto"
    fabric = L.Fabric(accelerator="cpu", devices=args.devices, strategy=strat)
    if args.spawn:
        fabric.launch(run)
    else:
        fabric.launch()
        run(fabric)


if __name__ == "__main__":
    if args.fault == "make_data":
        make_data(args.datadir)
    elif args.fault == "make_corrupt":
        make_data(args.datadir, corrupt=41)
    else:
        main()
