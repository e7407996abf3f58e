"""FSDP2 training with torch.distributed.checkpoint (DCP) save / resume on CPU/gloo.
Launch with torchrun, or with --spawn N (torch.multiprocessing.spawn)."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", required=True)
p.add_argument("--resume-from", default=None)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--optim", default="adamw", choices=["adamw", "sgd"])
p.add_argument("--convert-to", default=None, help="offline: load DCP checkpoint in one process, write a torch.save file")
p.add_argument("--no-overwrite", action="store_true", help="refuse to overwrite an existing checkpoint")
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=38050)
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(args.vocab, args.dim)
        self.blocks = nn.ModuleList([Block(args.dim) for _ in range(args.layers)])
        self.norm = nn.LayerNorm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab, bias=False)

    def forward(self, idx):
        h = self.tok(idx)
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def worker(local_rank=None, world=None):
    if local_rank is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                          MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)s rank={rank} %(message)s")
    log = logging.getLogger("ckpt")
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = TinyLM()
    for b in model.blocks:
        fully_shard(b, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if args.optim == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    start = 0
    if args.resume_from:
        log.info("resuming from %s (world_size=%d, optim=%s, dim=%d, layers=%d)",
                 args.resume_from, world, args.optim, args.dim, args.layers)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=args.resume_from)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"]) + 1
        log.info("resumed at step %d", start)
    g = torch.Generator().manual_seed(99 + rank)
    for step in range(start, start + args.steps):
        idx = torch.randint(0, args.vocab, (8, 33), generator=g)
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()
        log.info("step %d loss %.4f", step, loss.item())
        if (step + 1) % args.save_every == 0:
            path = os.path.join(args.ckpt_dir, f"step_{step:05d}")
            msd, osd = get_state_dict(model, opt)
            t0 = time.time()
            writer = dcp.FileSystemWriter(path, overwrite=not args.no_overwrite)
            dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)}, storage_writer=writer)
            log.info("checkpoint saved to %s in %.2fs", path, time.time() - t0)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


def convert():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    model = TinyLM()
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=args.resume_from)
    model.load_state_dict(state["model"])
    torch.save(model.state_dict(), args.convert_to)
    logging.info("wrote %s (%d tensors, %.1f MB)", args.convert_to, len(state["model"]),
                 sum(t.numel() * t.element_size() for t in state["model"].values()) / 2**20)


if __name__ == "__main__":
    if args.convert_to:
        convert()
        sys.exit(0)
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker()
