"""Family: Dynamo tracing problems (fullgraph breaks, data-dependent control flow,
dynamic-output-shape ops, recompilation limits, dynamic-shape constraints), single or DDP."""
import argparse, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(__file__))
from common import TinyLM, token_batch, init_dist, setup_logging, avg_loss, VOCAB

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "act_stats", "clip_branch", "mask_select", "varlen", "mark_dynamic", "noisy"])
p.add_argument("--fault-rank", type=int, default=-1, help="-1: all ranks")
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--dynamic", default="auto", choices=["auto", "true", "false"])
p.add_argument("--backend", default="inductor")
p.add_argument("--recompile-limit", type=int, default=8)
p.add_argument("--strict-recompile", action="store_true")
p.add_argument("--log-every", type=int, default=2)
p.add_argument("--compile-inner", action="store_true", help="compile the module, then wrap it in DDP")
args = p.parse_args()

rank, world = init_dist(timeout_s=45)
log = setup_logging(rank)
torch.manual_seed(0)
torch._dynamo.config.recompile_limit = args.recompile_limit
if args.strict_recompile:
    torch._dynamo.config.fail_on_recompile_limit_hit = True

faulty = args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank)


class Model(TinyLM):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.clip = 4.0

    def forward(self, idx):
        x = self.emb(idx) + self.pos[:, : idx.shape[1]]
        if self.mode == "act_stats":
            # debugging helper someone left on: print activation statistics
            print(f"[debug] emb act mean={x.mean().item():.4f} std={x.std().item():.4f}")
        x = self.blocks(x)
        if self.mode == "clip_branch":
            # clip activations only when they blow up
            if x.abs().max() > self.clip:
                x = x.clamp(-self.clip, self.clip)
        if self.mode == "mask_select":
            # drop padding positions (token 0) before the head
            keep = idx.reshape(-1) != 0
            h = self.norm(x).reshape(-1, x.shape[-1])[keep]
            return self.head(h), keep
        if self.mode == "mark_dynamic":
            # fast path for the "standard" sequence length
            if x.shape[1] == 32:
                x = x * 1.0
        if self.mode == "noisy" and idx.shape[0] > 4:
            print("[debug] large batch path")
        return self.head(self.norm(x))


model = inner = Model(args.fault if faulty else "none")
dyn = {"auto": None, "true": True, "false": False}[args.dynamic]
if world > 1 and args.compile_inner:
    cmodel = model = DDP(torch.compile(model, backend=args.backend, fullgraph=args.fullgraph, dynamic=dyn))
else:
    if world > 1:
        model = DDP(model)
    cmodel = torch.compile(model, backend=args.backend, fullgraph=args.fullgraph, dynamic=dyn)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
log.info("world=%d backend=%s fullgraph=%s dynamic=%s fault=%s", world, args.backend, args.fullgraph, args.dynamic,
         args.fault if faulty else "none")

t0 = time.time()
for step in range(args.steps):
    seq = 32
    bs = 8
    if args.fault in ("varlen", "noisy") and step >= args.fault_step and (faulty or args.fault == "noisy"):
        seq = 16 + 3 * (step - args.fault_step + 1)  # bucketless variable sequence length
    if args.fault == "noisy" and step % 3 == 2:
        bs = 4
    x, y = token_batch(step, bs=bs, seq=seq, rank=rank)
    if args.fault == "mark_dynamic" and faulty:
        torch._dynamo.mark_dynamic(x, 1)
    if faulty and args.fault in ("act_stats", "clip_branch", "mask_select", "mark_dynamic") and step < args.fault_step:
        # fault path only switches on at fault_step (eval / debug hook)
        inner.mode = "none"
    elif faulty:
        inner.mode = args.fault
    out = cmodel(x)
    if isinstance(out, tuple):
        logits, keep = out
        loss = F.cross_entropy(logits, y.reshape(-1)[keep])
    else:
        loss = F.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    l = avg_loss(loss, world)
    if rank == 0 and step % args.log_every == 0:
        log.info("step %d/%d loss %.4f seq %d (%.1fs)", step, args.steps, l, seq, time.time() - t0)
if rank == 0:
    log.info("training finished in %.1fs", time.time() - t0)
if world > 1:
    dist.destroy_process_group()
