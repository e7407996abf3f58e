"""Family: checkpointing around a torch.compile'd model (save from the compiled wrapper,
resume into a plain model, checkpoint writes under resource limits). tqdm progress bars."""
import argparse, os, sys, time
import torch, torch.nn.functional as F
import torch.distributed as dist
from tqdm import tqdm
sys.path.insert(0, os.path.dirname(__file__))
from common import TinyLM, token_batch, init_dist, avg_loss, VOCAB

p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--resume", action="store_true")
p.add_argument("--compile", action="store_true")
p.add_argument("--backend", default="inductor")
p.add_argument("--save-from", default="compiled", choices=["compiled", "orig"])
args = p.parse_args()

rank, world = init_dist(timeout_s=45)
torch.manual_seed(0)
model = TinyLM(d=64, layers=3)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
start = 0
if args.resume:
    path = os.path.join(args.ckpt_dir, "last.pt")
    print(f"[rank{rank}] resuming from {path}", flush=True)
    sd = torch.load(path, map_location="cpu")
    model.load_state_dict(sd["model"])
    opt.load_state_dict(sd["opt"])
    start = sd["step"] + 1
    print(f"[rank{rank}] resumed at step {start}", flush=True)
cmodel = torch.compile(model, backend=args.backend) if args.compile else model
os.makedirs(args.ckpt_dir, exist_ok=True)
bar = tqdm(range(start, start + args.steps), desc=f"train r{rank}", disable=rank != 0, mininterval=0, ncols=90)
for step in bar:
    x, y = token_batch(step, rank=rank)
    loss = F.cross_entropy(cmodel(x).reshape(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    l = avg_loss(loss, world)
    bar.set_postfix(loss=f"{l:.4f}")
    if (step + 1) % args.save_every == 0 and rank == 0:
        src = cmodel if args.save_from == "compiled" else model
        torch.save({"model": src.state_dict(), "opt": opt.state_dict(), "step": step},
                   os.path.join(args.ckpt_dir, "last.pt"))
        tqdm.write(f"[rank0] step {step}: checkpoint written to {args.ckpt_dir}/last.pt")
bar.close()
print(f"[rank{rank}] done", flush=True)
if world > 1:
    dist.destroy_process_group()
