"""Toy text-classification trainer over on-disk shards, with tqdm and debugging aids
(faulthandler registered on SIGUSR1, python -X dev, DEBUG logging). --fault selects the data problem."""
import argparse, faulthandler, logging, os, signal, sys, time, json
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-dir", default="data_shards")
p.add_argument("--num-shards", type=int, default=200)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--log-level", default="INFO")
args = p.parse_args()

logging.basicConfig(level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("data_trainer")
faulthandler.enable()
faulthandler.register(signal.SIGUSR1, all_threads=True)

LABELS = {"neg": 0, "neu": 1, "pos": 2}


def make_shards(d, n):
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(n):
        fn = os.path.join(d, f"shard-{i:05d}.jsonl")
        if os.path.exists(fn):
            continue
        with open(fn, "w") as f:
            for j in range(4):
                lab = ["neg", "neu", "pos"][int(torch.randint(0, 3, (1,), generator=g))]
                if args.fault == "bad_label" and i == 137 and j == 2:
                    lab = "Positive"  # one annotator used a different label vocabulary
                f.write(json.dumps({"ids": torch.randint(0, 500, (12,), generator=g).tolist(), "label": lab}) + "\n")


class ShardDataset(Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jsonl"))
        self._handles = {}  # keep shards open for fast random access
        log.debug("found %d shards in %s", len(self.files), d)

    def __len__(self):
        return len(self.files) * 4

    def _open(self, fn):
        if fn not in self._handles:
            self._handles[fn] = open(fn)
        fh = self._handles[fn]
        fh.seek(0)
        return fh

    def __getitem__(self, i):
        fn = self.files[i // 4]
        if args.fault == "fd_leak":
            lines = self._open(fn).readlines()
        else:
            lines = open(fn).readlines()
        rec = json.loads(lines[i % 4])
        return torch.tensor(rec["ids"]), LABELS[rec["label"]]


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(500, 32)
        self.fc = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc(self.emb(x))


def main():
    make_shards(args.data_dir, args.num_shards)
    ds = ShardDataset(args.data_dir)
    dl = DataLoader(ds, batch_size=8, shuffle=False, num_workers=args.workers)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        pbar = tqdm(dl, desc=f"epoch {epoch}", file=sys.stdout, mininterval=0.5)
        tot = 0.0
        for b, (x, y) in enumerate(pbar):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
            pbar.set_postfix(loss=f"{loss.item():.3f}")
            if args.step_sleep:
                time.sleep(args.step_sleep)
        log.info("epoch %d mean loss %.4f", epoch, tot / (b + 1))
    torch.save(model.state_dict(), os.path.join(args.data_dir, "model.pt"))
    log.info("finished")


if __name__ == "__main__":
    main()
