"""Tiny MLP LM trained with FSDP2 (fully_shard) / DTensor on gloo CPU."""
import argparse, os, sys, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import distribute_tensor, Shard, Replicate, DTensor

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--mesh", type=str, default="")
p.add_argument("--ckpt", type=str, default="")
p.add_argument("--resume", type=str, default="")
p.add_argument("--out", type=str, default="")
p.add_argument("--timeout", type=int, default=20)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
log = logging.getLogger("fsdp2_train")

class Block(nn.Module):
    def __init__(s, h):
        super().__init__(); s.fc1 = nn.Linear(h, 4 * h); s.fc2 = nn.Linear(4 * h, h); s.ln = nn.LayerNorm(h)
    def forward(s, x): return x + s.fc2(torch.relu(s.fc1(s.ln(x))))

class TinyLM(nn.Module):
    def __init__(s, vocab=128, h=64, n=2):
        super().__init__(); s.emb = nn.Embedding(vocab, h); s.blocks = nn.ModuleList(Block(h) for _ in range(n)); s.head = nn.Linear(h, vocab)
    def forward(s, ids):
        x = s.emb(ids)
        for b in s.blocks: x = b(x)
        return s.head(x)

def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    shape = tuple(int(x) for x in args.mesh.split(",")) if args.mesh else (world,)
    names = ("dp",) if len(shape) == 1 else ("dp", "tp")
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=names)
    log.info("rank %d/%d mesh %s", rank, world, mesh)
    torch.manual_seed(0)
    model = TinyLM(h=args.hidden)
    if args.ckpt and args.fault == "load_full":
        sd = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(sd)
    dp_mesh = mesh["dp"] if len(shape) > 1 else mesh
    for b in model.blocks: fully_shard(b, mesh=dp_mesh)
    fully_shard(model, mesh=dp_mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if args.resume:
        from torch.distributed.checkpoint.state_dict import set_state_dict
        import torch.distributed.checkpoint as dcp
        state = {"model": model.state_dict(), "optim": opt.state_dict()}
        dcp.load(state, checkpoint_id=args.resume)
        log.info("resumed from %s", args.resume)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        ids = torch.randint(0, 128, (4, 16), generator=g)
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 128), ids[:, 1:].reshape(-1))
        if args.fault == "mixed" and step == args.step:
            # L2 penalty on the first MLP added after the forward
            loss = loss + 1e-4 * model.blocks[0].fc1.weight.pow(2).sum()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); opt.zero_grad()
        if rank == 0:
            log.info("step %d loss %.4f grad_norm %.3f", step, loss.item(), gn.full_tensor().item() if isinstance(gn, DTensor) else gn.item())
    if args.out:
        import torch.distributed.checkpoint as dcp
        dcp.save({"model": model.state_dict(), "optim": opt.state_dict()}, checkpoint_id=args.out)
        log.info("saved checkpoint to %s", args.out)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
