"""Resume a toy run from a checkpoint that was written on a GPU node.

--make-ckpt PATH writes a checkpoint whose storages carry the 'cuda:N' location tag, exactly as
torch.save records them on a GPU machine (the tag is what torch.save writes for CUDA storages; here the
tag is produced by registering the location tagger for the run's storages, no GPU needed).
"""
import argparse, datetime, json, os, sys, time
import torch, torch.nn as nn, torch.distributed as dist
import torch.serialization as ser

p = argparse.ArgumentParser()
p.add_argument("--make-ckpt")
p.add_argument("--cuda-index", type=int, default=0)
p.add_argument("--resume")
p.add_argument("--map-location", default=None, help="value passed to torch.load (default: none)")
p.add_argument("--load-on", default="all", choices=["all", "rank0"])
p.add_argument("--steps", type=int, default=20)
p.add_argument("--weights-only", default="default", choices=["default", "true", "false"])
args = p.parse_args()


def model_fn():
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))


if args.make_ckpt:
    m = model_fn()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    m(torch.randn(4, 8)).sum().backward(); opt.step()
    orig = ser.location_tag
    ser.location_tag = lambda storage: f"cuda:{args.cuda_index}"  # what a GPU-side save records
    try:
        torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 1200, "epoch": 3}, args.make_ckpt)
    finally:
        ser.location_tag = orig
    print("wrote", args.make_ckpt, os.path.getsize(args.make_ckpt), "bytes")
    sys.exit(0)

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
print(f"[rank {rank}/{world}] cuda available: {torch.cuda.is_available()}, building model", flush=True)
model = model_fn()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
start = 0
if args.resume and (args.load_on == "all" or rank == 0):
    print(f"[rank {rank}] resuming from {args.resume}", flush=True)
    kw = {}
    if args.map_location is not None:
        ml = args.map_location
        kw["map_location"] = json.loads(ml) if ml.startswith("{") else ml
    if args.weights_only != "default":
        kw["weights_only"] = args.weights_only == "true"
    ck = torch.load(args.resume, **kw)
    model.load_state_dict(ck["model"]); opt.load_state_dict(ck["optimizer"]); start = ck["step"]
    print(f"[rank {rank}] resumed at step {start}", flush=True)
if world > 1:
    for prm in model.parameters():
        dist.broadcast(prm.data, 0)
    model = nn.parallel.DistributedDataParallel(model)
for s in range(start, start + args.steps):
    x = torch.randn(16, 8); y = (x.sum(1) > 0).long()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if s % 5 == 0:
        print(f"[rank {rank}] step {s} loss {loss.item():.4f}", flush=True)
    time.sleep(0.05)
print(f"[rank {rank}] finished", flush=True)
if world > 1:
    dist.destroy_process_group()
