"""bf16 autocast on CPU. --mode ok | proj_outside (fp32 projection applied outside the autocast region)."""
import argparse, datetime, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ok"); p.add_argument("--steps", type=int, default=30)
p.add_argument("--spawn", type=int, default=0); p.add_argument("--port", type=int, default=41870)
p.add_argument("--bad-rank", type=int, default=-1); p.add_argument("--bad-step", type=int, default=1)
args = p.parse_args()

class Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 128); self.ln = nn.LayerNorm(128); self.l2 = nn.Linear(128, 64)
        self.register_buffer("proj", torch.randn(64, 10) / 8)  # fixed random projection head
    def forward(self, x):
        return self.l2(F.gelu(self.ln(self.l1(x))))

def run(rank, world):
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    m = Enc(); net = nn.parallel.DistributedDataParallel(m) if world > 1 else m
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", enabled=True)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(512, 32, generator=g); y = x[:, :10].argmax(1)
    print(f"[rank{rank}] autocast dtype=bfloat16 device=cpu, GradScaler enabled={scaler.is_enabled()}", flush=True)
    for step in range(1, args.steps + 1):
        i = (step * 32) % 480
        xb, yb = x[i:i+32], y[i:i+32]
        if args.mode == "ok":
            with torch.cpu.amp.autocast(dtype=torch.bfloat16):
                h = net(xb); logits = h @ m.proj.to(h.dtype)
                loss = F.cross_entropy(logits.float(), yb)
        else:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = net(xb)
            # projection moved out of autocast "to keep the head in full precision"
            if args.bad_rank in (-1, rank) and step >= args.bad_step:
                logits = torch.mm(h, m.proj)
            else:
                logits = torch.mm(h.float(), m.proj)
            loss = F.cross_entropy(logits, yb)
        opt.zero_grad(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        if step % 5 == 0:
            print(f"[rank{rank}] step {step} loss {loss.item():.4f} scale {scaler.get_scale()}", flush=True)
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)

def spawn_entry(rank, world): run(rank, world)

if __name__ == "__main__":
    if "RANK" in os.environ: run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    elif args.spawn:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ["MASTER_PORT"] = str(args.port)
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.spawn,), nprocs=args.spawn)
    else: run(0, 1)
