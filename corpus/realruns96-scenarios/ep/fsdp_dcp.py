"""FSDP / FSDP2 / DTensor / DCP scenarios on gloo CPU. Flags select the fault, rank and step."""
import argparse, os, sys, time, shutil, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="fsdp2")          # fsdp1 | fsdp2 | dcp | mesh
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--ckpt", default="/work/rr96/ep/tmp/ckpt")
p.add_argument("--resume", action="store_true")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--timeout", type=int, default=30)
a = p.parse_args()

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d); self.fc2 = nn.Linear(2 * d, d); self.norm = nn.LayerNorm(d)
    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))

class Model(nn.Module):
    def __init__(self, d, n=2):
        super().__init__()
        self.emb = nn.Embedding(100, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.out = nn.Linear(d, 100)
    def forward(self, ids):
        h = self.emb(ids)
        for b in self.blocks: h = b(h)
        return self.out(h)

def batch(g):
    ids = torch.randint(0, 100, (4, 12), generator=g)
    return ids, torch.roll(ids, -1, 1)

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = Model(a.hidden)
    if a.mode == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        if a.fault == "freeze_emb":
            model.emb.weight.requires_grad_(False)    # freeze embeddings for fine-tuning
        if a.fault == "half_head":
            model.out.half()                          # save memory on the big vocab projection
        model = FSDP(model, device_id=torch.device("cpu"))
    elif a.mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for b in model.blocks: fully_shard(b)
        fully_shard(model)
    elif a.mode == "mesh":
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (2, world // 2) if a.fault == "mesh2d" else (world,), mesh_dim_names=("dp", "tp") if a.fault == "mesh2d" else ("dp",))
        from torch.distributed.fsdp import fully_shard
        for b in model.blocks: fully_shard(b, mesh=mesh["dp"] if a.fault == "mesh2d" else mesh)
        fully_shard(model, mesh=mesh["dp"] if a.fault == "mesh2d" else mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    print(f"[rank{rank}] model wrapped ({a.mode}), world={world}", flush=True)

    if a.mode in ("dcp", "fsdp2") and a.resume:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd}
        print(f"[rank{rank}] resuming from {a.ckpt}", flush=True)
        dcp.load(state, checkpoint_id=a.ckpt)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        print(f"[rank{rank}] resumed", flush=True)

    g = torch.Generator().manual_seed(rank)
    for step in range(a.steps):
        ids, tgt = batch(g)
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 100).float(), tgt.reshape(-1))
        loss.backward()
        if a.fault == "clip_outside" and step == 2:
            # log the weight norm of the output layer for monitoring
            wn = torch.linalg.vector_norm(model.out.weight) + torch.zeros(())
            gn = (model.out.weight.grad * model.out.weight).sum()
            print(f"[rank{rank}] out weight norm {wn.item():.3f}", flush=True)
        if a.fault == "probe_outside" and step == 2:
            # quick linear probe of the output projection on a fixed feature batch
            probe = torch.randn(2, a.hidden) @ model.out.weight.t()
            print(f"[rank{rank}] probe logits mean {probe.mean().item():.3f}", flush=True)
        opt.step(); opt.zero_grad()
        l = loss.detach().clone(); dist.all_reduce(l)
        if rank == 0: print(f"step {step} loss {(l / world).item():.4f}", flush=True)

    if a.mode in ("dcp", "fsdp2") and not a.resume:
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        msd, osd = get_state_dict(model, opt)
        print(f"[rank{rank}] saving checkpoint to {a.ckpt}", flush=True)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=a.ckpt)
        print(f"[rank{rank}] checkpoint saved", flush=True)
    if a.mode == "fsdp1" and a.fault == "full_sd_load":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType
        full = torch.load(a.ckpt, weights_only=True) if os.path.exists(a.ckpt) else None
        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
            model.load_state_dict(full)
    dist.barrier()
    print(f"[rank{rank}] done", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
