"""accelerate-style training loop on CPU. --fault selects a real bug/misconfig."""
import argparse, os, glob, time, logging
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator
from accelerate.logging import get_logger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-dir", default="/work/rr52/b/data/shards")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--out", default="/work/rr52/b/tmp/acc_out")
p.add_argument("--workers", type=int, default=0)
a = p.parse_args()
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger(__name__)

class ShardDS(Dataset):
    def __init__(self, d):
        self.files = sorted(glob.glob(os.path.join(d, "*.pt")))
        self.items = []
        for f in self.files:
            self.items.extend(torch.load(f))
    def __len__(self): return len(self.items)
    def __getitem__(self, i): return self.items[i]

acc = Accelerator(gradient_accumulation_steps=2)
log.info(f"{acc.state}", main_process_only=True)
ds = ShardDS(a.data_dir)
log.info(f"loaded {len(ds)} samples from {len(ds.files)} shards in {a.data_dir}", main_process_only=False)
dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=a.workers)
model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
for ep in range(a.epochs):
    for x, y in dl:
        with acc.accumulate(model):
            loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
            acc.backward(loss); opt.step(); opt.zero_grad()
        step += 1
        if step % 5 == 0:
            log.info(f"epoch {ep} step {step} loss {loss.item():.4f}")
acc.wait_for_everyone()
acc.save_state(a.out)
log.info("saved state to " + a.out)
acc.end_training()
