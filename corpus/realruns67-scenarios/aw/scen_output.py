"""Output/checkpoint writing family: checkpoints & metrics written to a configurable dir.
Faults come from the environment (full tmpfs, read-only mount, unprivileged uid, truncated file)."""
import argparse, os, sys, json, time, warnings
import torch, torch.nn as nn
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, make_model, batch, say, finish

p = argparse.ArgumentParser()
p.add_argument("--out", default="./out")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--saver", default="0", help="'0' = rank0 saves, 'all' = every rank saves its shard")
p.add_argument("--metrics", default=None, help="jsonl metrics file")
p.add_argument("--metrics-optional", action="store_true")
p.add_argument("--resume", default=None)
p.add_argument("--pad-mb", type=float, default=0.0, help="extra buffer saved with ckpt (EMA copy)")
p.add_argument("--logging", action="store_true")
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()

rank, world, log = setup(a.logging)
model = make_model(world)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
start = 0
if a.resume:
    say(rank, f"resuming from {a.resume}", log)
    sd = torch.load(a.resume, map_location="cpu")
    (model.module if world > 1 else model).load_state_dict(sd["model"])
    opt.load_state_dict(sd["opt"])
    start = sd["step"]
    say(rank, f"resumed at step {start}", log)
os.makedirs(a.out, exist_ok=True)
mf = None
if a.metrics:
    mf = open(a.metrics, "a")
ema = torch.zeros(int(a.pad_mb * 262144)) if a.pad_mb else None
it = range(start, a.steps)
if a.tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0)
lossf = nn.CrossEntropyLoss()
for step in it:
    x, y = batch(step, rank)
    loss = lossf(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0 and not a.tqdm:
        say(rank, f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e}", log)
    if mf is not None:
        rec = {"step": step, "rank": rank, "loss": round(loss.item(), 5), "t": time.time(), "pad": "x" * 2000}
        try:
            mf.write(json.dumps(rec) + "\n"); mf.flush()
        except OSError as e:
            if not a.metrics_optional:
                raise
            warnings.warn(f"could not write metrics to {a.metrics}: {e}; metrics logging disabled")
            try: mf.close()
            except OSError: pass
            mf = None
    if (step + 1) % a.save_every == 0:
        if a.saver == "all" or rank == int(a.saver):
            sd = {"model": (model.module if world > 1 else model).state_dict(), "opt": opt.state_dict(), "step": step + 1}
            if ema is not None: sd["ema"] = ema
            path = os.path.join(a.out, f"ckpt_step{step+1}_rank{rank}.pt" if a.saver == "all" else f"ckpt_step{step+1}.pt")
            torch.save(sd, path)
            say(rank, f"saved checkpoint {path}", log)
if mf is not None: mf.close()
say(rank, "training done", log)
finish()
