#!/usr/bin/env python
"""Held-out evaluation hook started by layered_train.py as a subprocess."""
import argparse, json, os, random
p = argparse.ArgumentParser(); p.add_argument("--step", type=int); p.add_argument("--split", default="heldout")
a = p.parse_args()
print(f"[eval_hook] evaluating split={a.split} at step {a.step}", flush=True)
random.seed(a.step)
per_class = {f"cls{i:02d}": round(random.random(), 4) for i in range(10)}
for k, v in per_class.items():
    print(f"[eval_hook]   acc[{k}] = {v}", flush=True)
summary = {"step": a.step, "split": a.split, "per_class": per_class}
# macro average over classes
macro = sum(v for v in summary["per_class"]) / len(summary["per_class"])
print(f"[eval_hook] macro_acc={macro:.4f}", flush=True)
