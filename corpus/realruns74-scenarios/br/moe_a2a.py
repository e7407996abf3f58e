"""Tiny mixture-of-experts layer with expert parallelism via all_to_all_single (gloo, CPU)."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--pylog", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--standardize", action="store_true")
p.add_argument("--log-every", type=int, default=2)
args = p.parse_args()

if args.pylog:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
log = logging.LoggerAdapter(logging.getLogger("moe"), {"rank": rank})
def say(msg):
    if args.pylog: log.info(msg)
    else: print(f"[rank{rank}] {msg}", flush=True)

torch.manual_seed(0)
D, TOK = 32, 64
num_experts = world  # one expert per rank
gate = nn.Linear(D, num_experts)
expert = nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, D))
head = nn.Linear(D, 1)
params = list(gate.parameters()) + list(expert.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, lr=3e-3)
capacity_factor = 1.25

def moe_forward(x, step):
    logits = gate(x)
    probs = logits.softmax(-1)
    top_p, top_e = probs.max(-1)
    if args.fault == "off_by_one" and rank == args.fault_rank and step >= args.fault_step:
        # "fix" for empty experts: shift ids by one -- bug: expert id can reach num_experts
        top_e = top_e + (top_e == 0).long()* 0 + 1
    order = torch.argsort(top_e)
    x_sorted = x[order]
    in_splits = torch.bincount(top_e, minlength=num_experts).tolist()
    if args.fault == "bad_splits" and rank == args.fault_rank and step >= args.fault_step:
        # capacity clipping applied locally but the clipped counts are not exchanged
        cap = int(capacity_factor * TOK / num_experts)
        in_splits = [min(s, cap) for s in in_splits]
        x_sorted = x_sorted[:sum(in_splits)]
    # exchange counts so every rank knows how much it will receive
    send_counts = torch.tensor(in_splits, dtype=torch.long)
    recv_counts = torch.empty_like(send_counts)
    if args.fault == "bad_splits" and rank == args.fault_rank and step >= args.fault_step:
        recv_counts = send_counts.clone()  # skipped count exchange on the "fast path"
    else:
        dist.all_to_all_single(recv_counts, send_counts)
    out_splits = recv_counts.tolist()
    cap_total = int(capacity_factor * TOK * world / num_experts)
    if sum(out_splits) > cap_total:
        warnings.warn(f"expert {rank} over capacity at step {step}: {sum(out_splits)} tokens > capacity {cap_total}; "
                      "load-balancing loss may be too weak (tokens are NOT dropped in this implementation)")
    recv = torch.empty(sum(out_splits), D)
    dist.all_to_all_single(recv, x_sorted.detach().contiguous(), out_splits, in_splits)
    recv.requires_grad_(True)
    y = expert(recv)
    back = torch.empty(sum(in_splits), D)
    dist.all_to_all_single(back, y.detach().contiguous(), in_splits, out_splits)
    # straight-through: local surrogate gradient for the expert (toy)
    out = torch.empty_like(x)
    out[order[:back.shape[0]]] = back
    out = out * top_p.unsqueeze(-1) + x
    aux = (y.pow(2).mean()) * 1e-3
    return out, aux, out_splits

it = range(args.steps)
if args.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="moe-train", file=sys.stdout)
for step in it:
    x = torch.randn(TOK, D) * (1 + 0.1 * rank)
    if args.fault == "zerostd" and rank == args.fault_rank and step >= args.fault_step:
        x[:, 3] = 0.5   # this rank's shard has a constant (dead) sensor channel
    if args.standardize:
        x = (x - x.mean(0)) / x.std(0)   # per-batch feature standardisation
    target = x.sum(-1, keepdim=True) * 0.1
    out, aux, out_splits = moe_forward(x, step)
    loss = nn.functional.mse_loss(head(out), target) + aux
    opt.zero_grad()
    loss.backward()
    for prm in params:
        if prm.grad is not None:
            dist.all_reduce(prm.grad); prm.grad /= world
    opt.step()
    if step % args.log_every == 0:
        say(f"step {step} loss {loss.item():.4f} tokens_recv={out_splits} lr=3.0e-03")
    time.sleep(0.1)
dist.barrier()
say("training finished")
dist.destroy_process_group()
