"""accelerate-driven trainer; precision / distribution come from `accelerate launch` flags or config."""
import torch, torch.nn as nn
from accelerate import Accelerator
acc = Accelerator()
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} mixed_precision={acc.mixed_precision}")
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(512, 20); y = (x[:, 0] > 0).long()
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
for ep in range(3):
    for xb, yb in dl:
        loss = nn.functional.cross_entropy(model(xb), yb); acc.backward(loss); opt.step(); opt.zero_grad()
    acc.print(f"epoch {ep} loss {loss.item():.4f}")
