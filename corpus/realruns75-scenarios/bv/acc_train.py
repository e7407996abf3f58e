"""accelerate-based toy training loop (the launcher config comes from the GPU cluster)."""
import argparse, time, torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import set_seed

p = argparse.ArgumentParser()
p.add_argument("--mixed-precision", default=None)
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()
acc = Accelerator(mixed_precision=args.mixed_precision) if args.mixed_precision else Accelerator()
set_seed(0)
acc.print(f"state: {acc.state}")
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X = torch.randn(640, 16); Y = X[:, :4].argmax(1)
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=16, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for xb, yb in dl:
    loss = nn.functional.cross_entropy(model(xb), yb)
    acc.backward(loss); opt.step(); opt.zero_grad()
    if step % 5 == 0:
        print(f"[process {acc.process_index}] step {step} loss {loss.item():.4f}", flush=True)
    step += 1
    if step >= args.steps:
        break
    time.sleep(0.05)
acc.wait_for_everyone()
acc.print("done")
