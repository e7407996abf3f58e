"""accelerate launch scenario: tiny regression with Accelerator."""
import argparse, torch, torch.nn as nn
from accelerate import Accelerator
p = argparse.ArgumentParser(); p.add_argument("--steps", type=int, default=20); p.add_argument("--mp", default=None)
a = p.parse_args()
acc = Accelerator(mixed_precision=a.mp) if a.mp else Accelerator()
acc.print(f"accelerator: {acc.state}")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3)
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(256, 16), torch.randn(256, 1)), batch_size=16)
model, opt, dl = acc.prepare(model, opt, dl)
for step, (x, y) in enumerate(dl):
    loss = nn.functional.mse_loss(model(x), y); acc.backward(loss); opt.step(); opt.zero_grad()
    if step % 5 == 0: acc.print(f"step {step} loss {loss.item():.4f}")
    if step >= a.steps: break
acc.print("done")
