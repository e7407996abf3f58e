"""Single-process trainer; eval set is read from per-sample .pt files by a DataLoader worker.
--fault: none | missing_sample (one eval file deleted after the eval index was built)"""
import argparse, glob, logging, os, time
import torch, torch.nn as nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--data", default="/work/rr54/j/tmp/evalset")
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("trainer")

os.makedirs(args.data, exist_ok=True)
for i in range(24):
    torch.save({"x": torch.randn(8), "y": torch.tensor(i % 3)}, f"{args.data}/sample_{i:04d}.pt")


class FileDS(torch.utils.data.Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(f"{root}/*.pt"))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        d = torch.load(self.files[i])
        return d["x"], d["y"]


ds = FileDS(args.data)
log.info("eval set: %d files", len(ds))
if args.fault == "missing_sample":
    os.remove(ds.files[17])  # cleaned up by another job while we train
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), 1e-2)
for step in tqdm(range(args.steps), desc="train", mininterval=0):
    x = torch.randn(32, 8); y = (x[:, 0] > 0).long() + (x[:, 1] > 1).long()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if args.sleep: time.sleep(args.sleep)
    if (step + 1) % 20 == 0:
        log.info("step %d loss %.4f", step + 1, loss.item())
    if (step + 1) % 50 == 0:
        dl = torch.utils.data.DataLoader(ds, batch_size=8, num_workers=1)
        correct = n = 0
        with torch.no_grad():
            for xb, yb in tqdm(dl, desc="eval", leave=False):
                correct += (model(xb).argmax(1) == yb).sum().item(); n += len(yb)
        log.info("eval acc %.3f", correct / n)
log.info("done")
