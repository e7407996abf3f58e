"""Lightning Fabric training loop scenarios (token classifier / npy shards)."""
import argparse, os, sys, glob, time, logging
from datetime import timedelta
import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset, DataLoader
from torch.nn.utils.rnn import pad_sequence
import lightning as L
from lightning.fabric.strategies import DDPStrategy
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="tokens")
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--strategy", default="ddp")
p.add_argument("--launcher", default="fabric")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--port", type=int, default=44150)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


class TokenDS(Dataset):
    def __init__(self, n=256, vocab=100):
        g = torch.Generator().manual_seed(1)
        self.items = []
        for i in range(n):
            ln = int(torch.randint(6, 20, (1,), generator=g)) if args.fault == "ragged" or args.data == "tokens_var" else 16
            ids = torch.randint(1, vocab, (ln,), generator=g)
            self.items.append((ids, int(ids[0] % 4)))
    def __len__(self): return len(self.items)
    def __getitem__(self, i):
        ids, lab = self.items[i]
        return {"input_ids": ids, "label": torch.tensor(lab)}


class NpyShardDS(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
    def __len__(self): return len(self.files) * 8
    def __getitem__(self, i):
        arr = np.load(self.files[i // 8])
        row = arr[i % 8]
        x = torch.from_numpy(row[:16].astype(np.int64)) % 100
        return {"input_ids": x, "label": torch.tensor(int(row[16]) % 4)}


def pad_collate(batch):
    ids = pad_sequence([b["input_ids"] for b in batch], batch_first=True, padding_value=0)
    return {"input_ids": ids, "label": torch.stack([b["label"] for b in batch])}


class Classifier(nn.Module):
    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 4))
    def forward(self, ids):
        return self.head(self.emb(ids).mean(1))


def run(fabric):
    log = logging.getLogger(f"fabric.rank{fabric.global_rank}")
    fabric.seed_everything(7)
    ds = NpyShardDS(args.data_dir) if args.data == "npy" else TokenDS()
    collate = None if args.fault == "ragged" else pad_collate
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers, collate_fn=collate)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, opt = fabric.setup(model, opt)
    dl = fabric.setup_dataloaders(dl)
    log.info("world_size=%d batches/epoch=%d workers=%d", fabric.world_size, len(dl), args.workers)
    step = 0
    for epoch in range(args.epochs):
        bar = tqdm(dl, desc=f"[rank{fabric.global_rank}] epoch {epoch}", disable=fabric.global_rank != 0, mininterval=0.5)
        tot = 0.0
        for batch in bar:
            if args.sleep:
                time.sleep(args.sleep)
            logits = model(batch["input_ids"])
            loss = nn.functional.cross_entropy(logits, batch["label"])
            opt.zero_grad()
            fabric.backward(loss)
            opt.step()
            tot += loss.item(); step += 1
            bar.set_postfix(loss=f"{loss.item():.3f}")
            if step % 10 == 0:
                log.info("step %d loss %.4f", step, loss.item())
        avg = fabric.all_reduce(torch.tensor(tot / len(dl)), reduce_op="mean")
        fabric.print(f"epoch {epoch} mean_loss={avg.item():.4f}")
    fabric.barrier()
    fabric.print("training finished")


def mp_worker(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), RANK=str(rank),
                      LOCAL_RANK=str(rank), WORLD_SIZE=str(world), NODE_RANK="0")
    fabric = L.Fabric(accelerator="cpu", devices=world, strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=40)))
    fabric.launch()
    run(fabric)


if __name__ == "__main__":
    if args.launcher == "mpspawn":
        import torch.multiprocessing as mp
        mp.spawn(mp_worker, args=(args.devices,), nprocs=args.devices, join=True)
    else:
        strat = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=40),
                            start_method="spawn" if args.strategy == "ddp_spawn" else "popen") if args.devices > 1 else "auto"
        fabric = L.Fabric(accelerator="cpu", devices=args.devices, strategy=strat)
        if args.strategy == "ddp_spawn":
            fabric.launch(run)
        else:
            fabric.launch()
            run(fabric)
