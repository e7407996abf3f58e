"""FSDP1 / FSDP2 training on CPU with gloo. --fault selects an induced bug on --fault-rank at --fault-step."""
import argparse, os, sys, time, logging, math
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--impl", default="fsdp1", choices=["fsdp1", "fsdp2"])
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--mp", default="none", choices=["none", "bf16", "fp16"])
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--ckpt", default="")
p.add_argument("--timeout", type=int, default=30)
args = p.parse_args()


class Block(nn.Module):
    def __init__(s, d):
        super().__init__(); s.ln = nn.LayerNorm(d); s.fc1 = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)
    def forward(s, x):
        return x + s.fc2(torch.nn.functional.gelu(s.fc1(s.ln(x))))


class TinyLM(nn.Module):
    def __init__(s, vocab=128, d=64, n_layer=2):
        super().__init__()
        s.emb = nn.Embedding(vocab, d); s.blocks = nn.ModuleList([Block(d) for _ in range(n_layer)])
        s.norm = nn.LayerNorm(d); s.head = nn.Linear(d, vocab)
    def forward(s, x):
        h = s.emb(x)
        for b in s.blocks: h = b(h)
        return s.head(s.norm(h))


def main(rank=None, world=None):
    if rank is not None:
        os.environ["RANK"] = str(rank); os.environ["WORLD_SIZE"] = str(world); os.environ["LOCAL_RANK"] = str(rank)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank(); world = dist.get_world_size()
    if args.logfmt == "logging":
        logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    out = (lambda m: log.info(m)) if args.logfmt == "logging" else (lambda m: print(f"[rank{rank}] {m}", flush=True))
    torch.manual_seed(0)
    cfg = dict(vocab=128, d=64, n_layer=2)
    if args.fault == "rank_config" and rank == args.fault_rank:
        cfg["n_layer"] = 3          # stale config file on one node
    model = TinyLM(**cfg)
    if args.fault == "mixed_dtype":
        model.head = model.head.double()   # "keep the head in fp64 for numerics"
    if args.fault == "freeze_emb":
        for prm in model.emb.parameters(): prm.requires_grad_(False)
    opt_before = None
    if args.fault == "opt_before_wrap":
        opt_before = torch.optim.AdamW(model.parameters(), lr=args.lr)
    out(f"world={world} impl={args.impl} params={sum(p.numel() for p in model.parameters())} mp={args.mp}")

    if args.impl == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        mp = None
        if args.mp != "none":
            dt = torch.bfloat16 if args.mp == "bf16" else torch.float16
            mp = MixedPrecision(param_dtype=dt, reduce_dtype=dt, buffer_dtype=dt)
        kw = dict(auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"), mixed_precision=mp,
                  use_orig_params=(args.fault in ("opt_before_wrap_orig",)), sync_module_states=(args.fault == "sync_cpu"))
        if args.fault == "cuda_device_id":
            kw["device_id"] = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))  # config copied from the GPU cluster
        if args.fault == "ignored":
            kw["ignored_modules"] = [model.head]
        model = FSDP(model, **kw)
    else:
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        mpp = MixedPrecisionPolicy()
        if args.mp != "none":
            dt = torch.bfloat16 if args.mp == "bf16" else torch.float16
            mpp = MixedPrecisionPolicy(param_dtype=dt, reduce_dtype=dt)
        for b in model.blocks: fully_shard(b, mp_policy=mpp)
        fully_shard(model, mp_policy=mpp)
    if args.fault == "opt_before_wrap" and opt_before is not None:
        opt = opt_before
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        out(str(model)[:400])

    g = torch.Generator().manual_seed(100 + rank)
    it = range(args.steps)
    if args.logfmt == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", disable=False)
    t0 = time.time()
    for step in it:
        x = torch.randint(0, 128, (8, 16), generator=g)
        y = torch.roll(x, -1, 1)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, 128), y.reshape(-1))
        if args.fault == "tied_reg" and step >= args.fault_step:
            # L2 penalty on the embedding, computed outside the forward
            loss = loss + 1e-4 * (model.emb.weight ** 2).sum()
        if args.fault == "outside_fwd" and step >= args.fault_step:
            # "weight tying" done by hand in the training loop
            extra = torch.nn.functional.linear(model(x)[:, :, :64].float(), model.head.weight)
            loss = loss + extra.mean() * 0
        if args.fault == "block_reg" and step >= args.fault_step:
            # weight-decay-like penalty on the first block, added to the loss after forward
            loss = loss + 1e-4 * model.blocks[0].fc1.weight.pow(2).sum()
        loss.backward()
        if args.fault == "clip_rank0_only" and rank == 0:
            gn = model.clip_grad_norm_(1.0) if args.impl == "fsdp1" else torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            out(f"step {step} grad_norm {float(gn):.4f}")
        elif args.fault == "clip_child":
            gn = model.blocks[0].clip_grad_norm_(1.0)   # clip only the transformer blocks
        elif args.fault == "clip_local":
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            out(f"step {step} grad_norm {float(gn):.4f}")
        else:
            if args.impl == "fsdp1":
                gn = model.clip_grad_norm_(1.0)
            else:
                gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); opt.zero_grad()
        if args.fault == "kill" and rank == args.fault_rank and step == args.fault_step:
            os.kill(os.getpid(), 9)
        if args.fault == "nan_lr" and step == args.fault_step:
            for gp in opt.param_groups: gp["lr"] = 1e6
        l = loss.detach().clone(); dist.all_reduce(l); l /= world
        if args.logfmt != "tqdm" or rank == 0:
            out(f"step {step} loss {l.item():.4f} lr {opt.param_groups[0]['lr']:.2e} {(time.time()-t0)/(step+1):.3f}s/it")
        if args.fault == "nan_lr" and not math.isfinite(l.item()):
            raise FloatingPointError(f"loss is {l.item()} at step {step}, stopping")
    if args.ckpt:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType, FullStateDictConfig
        if args.impl == "fsdp1":
            with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
                sd = model.state_dict()
        else:
            sd = {k: v.full_tensor() for k, v in model.state_dict().items()}
        if rank == 0:
            torch.save(sd, args.ckpt); out(f"saved {args.ckpt}")
    dist.barrier()
    out("training done")
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "44650")
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        main()
