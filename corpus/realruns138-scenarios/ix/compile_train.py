"""Single-process training with torch.compile: first steps are slow (compilation), then fast."""
import argparse, logging, time, warnings
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--dynamic-shapes", action="store_true", help="vary the batch size every step")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
cmodel = torch.compile(model)
log.info("compiled model with torch.compile (backend=inductor); first step will compile")
for step in range(args.steps):
    bs = 16 + (step % 5) if args.dynamic_shapes else 16
    x = torch.randn(bs, 64); y = torch.randint(0, 10, (bs,))
    t0 = time.time()
    loss = nn.functional.cross_entropy(cmodel(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    dt = time.time() - t0
    if dt > 5:
        log.warning("step %d took %.1fs (expected < 0.1s) - is the job stuck?", step, dt)
    if step % 10 == 0 or dt > 5:
        log.info("step %d loss %.4f step_time %.3fs", step, loss.item(), dt)
log.info("done: %d steps", args.steps)
