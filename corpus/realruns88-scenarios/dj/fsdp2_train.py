"""FSDP2 (fully_shard) training of a tiny LM on CPU/gloo. --fault selects an injected bug."""
import argparse, os, sys, time, logging, warnings, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--layers", type=int, default=3)
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--device", default="cpu")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--mem-headroom-mb", type=int, default=120)
p.add_argument("--pidfile", default=None)
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
    def __init__(self, vocab, d, n):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        h = self.tok(idx)
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def setup_distributed():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    return dist.get_rank(), dist.get_world_size()


def main():
    rank, world = setup_distributed()
    if args.log_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train")
    out = (lambda m: log.info(m)) if args.log_style == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    if args.pidfile:
        with open(f"{args.pidfile}.{rank}", "w") as f:
            f.write(str(os.getpid()))
    if args.fault == "init-twice":
        # model builder "makes sure" distributed is set up - calls the same helper again
        setup_distributed()
    if args.fault == "mem-limit" and rank == args.fault_rank:
        import resource  # this worker's node has a tight per-process address-space limit
        with open("/proc/self/status") as f:
            vm = int([l for l in f if l.startswith("VmSize")][0].split()[1]) * 1024
        lim = vm + args.mem_headroom_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    mesh = init_device_mesh(args.device, (world,), mesh_dim_names=("dp",))
    torch.manual_seed(0)
    if args.fault == "meta-init":
        with torch.device("meta"):
            model = TinyLM(args.vocab, args.dim, args.layers)
    else:
        model = TinyLM(args.vocab, args.dim, args.layers)
    for i, blk in enumerate(model.blocks):
        if args.fault == "skip-block-one-rank" and rank == args.fault_rank and i == 1:
            continue  # this rank's wrap policy left block 1 out of sharding
        fully_shard(blk, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if args.fault == "meta-init":
        pass  # TODO: model.to_empty(device="cpu"); model.apply(init_weights)
    nparams = sum(p.numel() for p in model.parameters())
    out(f"model params (local shards): {nparams}  world={world} mesh={mesh}")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(1234 + rank)
    it = range(args.steps)
    if args.log_style == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank} train", disable=False, mininterval=0)
    for step in it:
        idx = torch.randint(0, args.vocab, (args.bs, args.seq + 1), generator=g)
        x, y = idx[:, :-1], idx[:, 1:]
        mask = torch.ones_like(y, dtype=torch.float32)
        mask[:, : args.seq // 4] = 0.0  # prompt tokens are not trained on
        if args.fault == "empty-mask" and rank == args.fault_rank and step == args.fault_step:
            mask[:] = 0.0  # this shard's batch is all prompt/padding
        logits = model(x)
        ce = F.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1), reduction="none")
        loss = (ce * mask.reshape(-1)).sum() / mask.sum()
        if args.fault == "emb-reg" and step == args.fault_step:
            # soft orthogonality regulariser on the first MLP projection
            w = model.blocks[0].fc1.weight
            eye = torch.eye(w.shape[0])
            loss = loss + 1e-4 * (w @ w.T - eye).pow(2).mean()
        if args.fault == "head-probe" and rank == args.fault_rank and step == args.fault_step:
            with torch.no_grad():
                probe = F.linear(torch.randn(2, args.dim), model.blocks[-1].fc2.weight)
                out(f"probe logits std {probe.std().item():.4f}")
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        msg = f"step {step} loss {loss.item():.4f} grad_norm {gn.full_tensor().item() if hasattr(gn, 'full_tensor') else gn.item():.4f}"
        if args.log_style == "tqdm":
            it.set_postfix(loss=f"{loss.item():.4f}")
            if step % 2 == 0:
                it.write(f"[rank{rank}] {msg}")
        else:
            out(msg)
        if args.fault == "slow-step" and rank == args.fault_rank and step == args.fault_step:
            time.sleep(3600)
        if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
            import ctypes
            ctypes.string_at(0)  # buggy native helper dereferences NULL
        time.sleep(0.2)
        if args.ckpt_dir and step == args.fault_step:
            import torch.distributed.checkpoint as dcp
            from torch.distributed.checkpoint.state_dict import get_model_state_dict
            if args.fault == "rank0-save":
                if rank == 0:
                    out(f"saving checkpoint to {args.ckpt_dir}")
                    dcp.save({"model": get_model_state_dict(model)}, checkpoint_id=args.ckpt_dir)
            else:
                dcp.save({"model": get_model_state_dict(model)}, checkpoint_id=args.ckpt_dir)
                out(f"saved checkpoint to {args.ckpt_dir}")
    if args.fault == "full-sd-export" or args.fault == "full-sd-oom":
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, StateDictOptions
        if args.fault == "full-sd-oom" and rank == args.fault_rank:
            import resource
            with open("/proc/self/status") as f:
                vm = [l for l in f if l.startswith("VmSize")][0].split()[1]
            lim = int(vm) * 1024 + 2 * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        out("gathering full state dict for export")
        sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if rank == 0:
            torch.save(sd, os.path.join(args.ckpt_dir or "/tmp", "export.pt"))
            out(f"exported {len(sd)} tensors")
    dist.barrier()
    out("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
