"""Toy object detection: per-rank COCO-style annotation JSON, fixed-size images, box regression head."""
import argparse, os, sys, json, random
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-index", type=int, default=21)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--n", type=int, default=80)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--use-tqdm", action="store_true")
args = p.parse_args()

def prepare():
    rng = random.Random(3)
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.nranks):
        anns = []
        for i in range(args.n):
            nbox = 2
            if args.fault == "extrabox" and r == args.bad_rank and i == args.bad_index:
                nbox = 3   # a crowded frame labelled by a second annotator
            boxes = []
            for _ in range(nbox):
                x, y = rng.uniform(0, 20), rng.uniform(0, 20)
                boxes.append([x, y, x + rng.uniform(4, 12), y + rng.uniform(4, 12)])
            anns.append({"image_id": i, "seed": rng.randint(0, 10**6), "boxes": boxes})
        json.dump({"annotations": anns}, open(os.path.join(args.prepare, f"instances_rank{r}.json"), "w"))
    print("prepared", args.prepare)

class Det(Dataset):
    def __init__(self, root, rank):
        self.anns = json.load(open(os.path.join(root, f"instances_rank{rank}.json")))["annotations"]
    def __len__(self): return len(self.anns)
    def __getitem__(self, i):
        a = self.anns[i]
        g = torch.Generator().manual_seed(a["seed"])
        img = torch.rand(3, 32, 32, generator=g)
        return {"image": img, "boxes": torch.tensor(a["boxes"], dtype=torch.float32) / 32.0, "image_id": a["image_id"]}

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, stride=2); self.fc = nn.Linear(16, 8)
    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).mean((2, 3))).view(-1, 2, 4)

def main():
    rank, world = common.setup(30)
    log = common.get_logger("det", rank)
    ds = Det(args.data, rank)
    dl = DataLoader(ds, batch_size=args.bs, shuffle=False, num_workers=args.workers)
    model = torch.nn.parallel.DistributedDataParallel(Head()) if world > 1 else Head()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    it = dl
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, file=sys.stdout, mininterval=0, desc="train")
    for step, b in enumerate(it):
        loss = F.smooth_l1_loss(model(b["image"]), b["boxes"])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 3 == 0:
            log.info(f"step {step} box_loss {loss.item():.4f}")
    log.info("epoch done")
    common.cleanup()

if __name__ == "__main__":
    if args.prepare: prepare()
    else: main()
