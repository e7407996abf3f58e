"""Regenerate the real negative example for cuda-device-side-assert (CPU).

negative-1.log: the same out-of-range class label (10 with 10 classes) on CPU. The CPU
  kernel raises a plain `IndexError: Target 10 is out of bounds.` - the neighbouring
  loss-target-mismatch class, with no device-side assert. (The CUDA forms in the
  positive examples need a GPU and are written from aten/src/ATen/native/cuda/Loss.cu.)

Run: .venv/bin/python scripts/examples/cuda-device-side-assert.py
"""

from __future__ import annotations

from _runner import PY, run_logged

ID = "cuda-device-side-assert"

TRAIN = r'''
import torch
import torch.nn.functional as F

torch.manual_seed(0)
num_classes = 10
model = torch.nn.Linear(32, num_classes)
for step in range(1, 5):
    x = torch.randn(8, 32)
    y = torch.randint(0, num_classes, (8,))
    if step == 4:
        y[3] = num_classes        # labels were 1-based in this shard
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
'''


if __name__ == "__main__":
    run_logged(ID, "negative-1.log", [PY, "train_cls.py"], files={"train_cls.py": TRAIN}, timeout=120)
