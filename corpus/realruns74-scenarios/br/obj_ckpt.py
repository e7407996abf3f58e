"""Tiny GPT-2 data-parallel training (manual grad all_reduce) that shares run config, resume state and
metrics with object collectives (broadcast_object_list / all_gather_object / gather_object)."""
import argparse, os, sys, time, json, warnings, logging
from datetime import timedelta
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch, torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=8)
p.add_argument("--resume", default="")
p.add_argument("--out", default="/work/rr74/br/try/ckpt")
p.add_argument("--save-every", type=int, default=4)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()

n_embd = args.n_embd
if args.fault == "cfgwidth" and rank == args.fault_rank:
    n_embd = 96   # this node's launch script still exports the old model size
cfg = GPT2Config(n_layer=2, n_head=2, n_embd=n_embd, vocab_size=128, n_positions=32)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

# rank 0 reads resume state and shares it with everybody
payload = [None]
if rank == 0:
    state = {"step": 0, "model": model.state_dict(), "opt": None}
    if args.resume:
        log.info("resuming from %s", args.resume)
        state = torch.load(args.resume, map_location="cpu")
    payload = [state]
dist.broadcast_object_list(payload, src=0)
state = payload[0]
model.load_state_dict(state["model"])
if state.get("opt"): opt.load_state_dict(state["opt"])
start = state["step"]
if rank == 0: log.info("starting at step %d world=%d params=%d", start, world, sum(p.numel() for p in model.parameters()))

for step in range(start, start + args.steps):
    g = torch.Generator().manual_seed(step * 10 + rank)
    ids = torch.randint(0, 128, (4, 32), generator=g)
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad(); out.loss.backward()
    for prm in model.parameters():
        dist.all_reduce(prm.grad); prm.grad /= world
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    metrics = {"rank": rank, "loss": round(out.loss.item(), 4), "tokens": ids.numel()}
    if args.fault == "unpicklable" and rank == args.fault_rank and step >= args.fault_step:
        metrics["samples"] = (i for i in range(ids.shape[0]))   # lazily-evaluated sample ids
    gathered = [None] * world
    dist.all_gather_object(gathered, metrics)
    if rank == 0:
        log.info("step %d mean_loss %.4f tokens %d", step, sum(m["loss"] for m in gathered) / world, sum(m["tokens"] for m in gathered))
    if (step + 1) % args.save_every == 0 and rank == 0:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"step{step+1}.pt")
        torch.save({"step": step + 1, "model": model.state_dict(), "opt": opt.state_dict()}, path)
        log.info("saved %s", path)
    dist.barrier()
    time.sleep(0.1)
if rank == 0: log.info("training complete")
dist.destroy_process_group()
