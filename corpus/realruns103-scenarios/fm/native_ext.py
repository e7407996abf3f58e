"""Single-process trainer whose feature extractor keeps its buffers in native memory
(ctypes over libc malloc/free, standing in for a small C extension)."""
import argparse, ctypes, time
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bug", default="none")  # none | double_free | use_after_free
args = p.parse_args()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]

class NativeFeatures:
    def __init__(self, n):
        self.n = n
        self.buf = libc.malloc(n * 4)
    def compute(self, x):
        arr = (ctypes.c_float * self.n).from_address(self.buf)
        for i, v in enumerate(x.flatten()[: self.n].tolist()): arr[i] = v * 0.5
        return torch.tensor(list(arr)).view(1, -1)
    def release(self):
        libc.free(self.buf)          # explicit release at epoch end ...
    def __del__(self):
        libc.free(self.buf)          # ... and again when the object is collected

model = nn.Linear(64, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    feat = NativeFeatures(64)
    for step in range(args.steps):
        x = torch.randn(1, 64)
        loss = (model(feat.compute(x)) - x.sum()).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.3f}", flush=True)
    if args.bug == "double_free":
        feat.release()
    del feat
    print(f"epoch {epoch} done", flush=True)
print("training complete", flush=True)
