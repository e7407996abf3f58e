"""Train a few FSDP steps on CPU/gloo, then save/load checkpoints. --fault picks a checkpointing bug."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, StateDictType, FullStateDictConfig, ShardedStateDictConfig
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
import torch.distributed.checkpoint as dcp

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train", choices=["train", "resume"])
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=5)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--opt", default="adamw")
p.add_argument("--orig", type=int, default=1)
p.add_argument("--offload", type=int, default=1)
args = p.parse_args()

class Block(nn.Module):
    def __init__(s, d):
        super().__init__(); s.ln = nn.LayerNorm(d); s.fc1 = nn.Linear(d, 4 * d); s.fc2 = nn.Linear(4 * d, d)
    def forward(s, x): return x + s.fc2(torch.relu(s.fc1(s.ln(x))))

class TinyLM(nn.Module):
    def __init__(s, vocab=128, d=64, n_layer=2):
        super().__init__(); s.emb = nn.Embedding(vocab, d); s.blocks = nn.Sequential(*[Block(d) for _ in range(n_layer)]); s.head = nn.Linear(d, vocab)
    def forward(s, x): return s.head(s.blocks(s.emb(x)))

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
log = logging.getLogger("ckpt")
torch.manual_seed(0)
base = TinyLM()
early_opt = torch.optim.AdamW(base.parameters(), lr=1e-3) if args.fault == "opt_before_wrap" else None
model = FSDP(base, auto_wrap_policy=ModuleWrapPolicy({Block}), device_id=torch.device("cpu"), use_orig_params=bool(args.orig))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3) if args.opt == "adamw" else torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
if early_opt is not None:
    opt = early_opt   # optimizer was created from the unwrapped model
log.info(f"world_size={world} optimizer={type(opt).__name__} ckpt_dir={args.ckpt_dir} mode={args.mode}")
start = 0

if args.mode == "resume":
    if args.fault in ("full_rank0_load", "weights_only", "corrupt"):
        path = os.path.join(args.ckpt_dir, "model_full.pt")
        if args.fault == "full_rank0_load":
            # state dict was only gathered to rank 0; every rank loads it into FULL_STATE_DICT
            sd = torch.load(path) if rank == 0 else {}
        else:
            sd = torch.load(path)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(rank0_only=False)):
            model.load_state_dict(sd["model"] if "model" in sd else sd)
    elif args.fault == "wrong_sd_type":
        sd = torch.load(os.path.join(args.ckpt_dir, "model_full.pt"))
        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
            model.load_state_dict(sd["model"])
    else:
        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
            state = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
            dcp.load(state, checkpoint_id=args.ckpt_dir)
            model.load_state_dict(state["model"])
            FSDP.optim_state_dict_to_load(model, opt, state["optim"])
            opt.load_state_dict(FSDP.optim_state_dict_to_load(model, opt, state["optim"]))
    start = args.steps
    log.info(f"resumed from {args.ckpt_dir}")

g = torch.Generator().manual_seed(rank)
for step in range(start, start + args.steps):
    x = torch.randint(0, 128, (8, 16), generator=g)
    loss = nn.functional.cross_entropy(model(x).reshape(-1, 128), torch.roll(x, -1, 1).reshape(-1))
    loss.backward(); model.clip_grad_norm_(1.0); opt.step(); opt.zero_grad()
    log.info(f"step {step} loss {loss.item():.4f}")

if args.mode == "train":
    if args.fault in ("full", "weights_only", "corrupt", "disk_full"):
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=bool(args.offload), rank0_only=True)):
            msd = model.state_dict()
        if rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, "model_full.pt")
            blob = {"model": msd, "step": args.steps}
            if args.fault == "weights_only":
                blob["args"] = args   # keep the run config next to the weights
            if args.fault == "disk_full":
                path = args.ckpt_dir  # ckpt path pointed at a full device
            log.info(f"saving full state dict to {path}")
            torch.save(blob, path)
            if args.fault == "corrupt":
                sz = os.path.getsize(path)
                with open(path, "r+b") as f: f.truncate(sz // 2)   # copy interrupted
    else:
        with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
            state = {"model": model.state_dict(), "optim": FSDP.optim_state_dict(model, opt)}
        log.info(f"saving sharded checkpoint to {args.ckpt_dir}")
        dcp.save(state, checkpoint_id=args.ckpt_dir)
    log.info("checkpoint written")
dist.barrier()
log.info("done")
dist.destroy_process_group()
