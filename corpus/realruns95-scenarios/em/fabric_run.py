"""Lightning Fabric CPU/gloo training loop scenarios. --fault selects the induced problem."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.fabric.strategies import DDPStrategy
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--strategy", default="ddp")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--mp-spawn", action="store_true", help="start ranks with torch.multiprocessing.spawn")
p.add_argument("--port", type=int, default=40830)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("fabric_train")


class Model(nn.Module):
    def __init__(self, hidden=64, aux_head=False, n_blocks=2):
        super().__init__()
        self.emb = nn.Linear(16, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.GELU()) for _ in range(n_blocks)])
        self.head = nn.Linear(hidden, 4)
        self.aux = nn.Linear(hidden, 1) if aux_head else None
    def forward(self, x):
        h = F.gelu(self.emb(x))
        for b in self.blocks:
            h = h + b(h)
        return self.head(h)


def run(fabric):
    rank = fabric.global_rank
    fabric.seed_everything(7 + rank)
    n_blocks = 2
    if args.fault == "model-mismatch":
        # per-rank config file: the copy on rank 1 was edited to n_blocks=3
        n_blocks = 3 if rank == args.rank else 2
        log.info("rank %d model config: n_blocks=%d", rank, n_blocks)
    model = Model(aux_head=(args.fault == "unused"), n_blocks=n_blocks)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model, opt = fabric.setup(model, opt)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(250, 16, generator=g)
    y = x[:, :4].argmax(1)
    dl = fabric.setup_dataloaders(DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True))
    step = 0
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7) if args.fault == "noisy" else None
    for ep in range(args.epochs):
        if sched is not None:
            sched.step()  # decay at the start of each epoch
            log.info("rank %d epoch %d lr=%.4f", rank, ep, sched.get_last_lr()[0])
        preds = []
        bar = tqdm(dl, desc=f"[rank {rank}] epoch {ep}", disable=(rank != 0 and args.fault != "noisy"))
        for xb, yb in bar:
            out = model(xb)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad()
            fabric.backward(loss)
            if args.fault == "noisy":
                gn = fabric.clip_gradients(model, opt, max_norm=1.0)
                if gn > 1.0:
                    log.warning("rank %d step %d: large gradient norm %.2f clipped to 1.0", rank, step, float(gn))
                loss = torch.tensor(loss)  # keep a detached copy for the progress bar
            opt.step()
            preds.append(out.argmax(1))
            bar.set_postfix(loss=f"{loss.item():.4f}")
            step += 1
        if args.fault == "gather-uneven":
            # gather all predictions for a global confusion matrix (sampler pads? no: drop_last=False, uneven)
            local = torch.cat(preds)
            if rank == args.rank:
                local = local[:-3]  # rank keeps only samples it has labels for
            allp = fabric.all_gather(local)
        else:
            allp = fabric.all_reduce(torch.tensor(float(loss.item())), reduce_op="mean")
        if rank == 0:
            log.info("epoch %d done, step %d, mean last loss %.4f", ep, step, float(allp.float().mean()))
    fabric.barrier()
    if rank == 0 or args.fault != "save-rank0":
        fabric.save("/work/rr95/em/work/fabric_ckpt.pt", {"model": model, "optimizer": opt, "step": step})
    if rank == 0:
        log.info("saved checkpoint at step %d", step)


def make_fabric():
    if args.strategy == "ddp":
        strat = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30),
                            find_unused_parameters=False)
    elif args.strategy == "ddp_spawn":
        strat = DDPStrategy(start_method="spawn", process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strat = args.strategy
    return L.Fabric(accelerator="cpu", devices=args.devices, strategy=strat)


def mp_worker(local_rank):
    os.environ.update(LOCAL_RANK=str(local_rank), NODE_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port),
                      WORLD_SIZE=str(args.devices))
    fabric = make_fabric()
    fabric.launch()
    run(fabric)


if __name__ == "__main__":
    if args.mp_spawn:
        import torch.multiprocessing as mp
        mp.spawn(mp_worker, nprocs=args.devices, join=True)
    else:
        fabric = make_fabric()
        fabric.launch(run) if args.strategy == "ddp_spawn" else (fabric.launch(), run(fabric))
