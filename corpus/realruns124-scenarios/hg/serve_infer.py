"""Batch inference with an exported artefact (TorchScript or torch.export), as a serving smoke test."""
import argparse, time, sys, torch

p = argparse.ArgumentParser()
p.add_argument("--artefact", required=True)
p.add_argument("--kind", choices=["torchscript", "export"], default="torchscript")
p.add_argument("--batches", type=int, default=20)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--feat", type=int, default=32)
args = p.parse_args()

print(f"[serve] torch {torch.__version__}; loading {args.kind} artefact {args.artefact}", flush=True)
t0 = time.time()
if args.kind == "torchscript":
    model = torch.jit.load(args.artefact, map_location="cpu")
else:
    model = torch.export.load(args.artefact).module()
print(f"[serve] loaded in {time.time()-t0:.2f}s", flush=True)
g = torch.Generator().manual_seed(5)
lat = []
with torch.inference_mode():
    for b in range(args.batches):
        x = torch.randn(args.bs, args.feat, generator=g)
        t = time.time()
        y = model(x)
        lat.append((time.time() - t) * 1000)
        if (b + 1) % 5 == 0:
            print(f"[serve] batch {b+1}/{args.batches} out={tuple(y.shape)} p50={sorted(lat)[len(lat)//2]:.2f}ms", flush=True)
print("[serve] OK", flush=True)
