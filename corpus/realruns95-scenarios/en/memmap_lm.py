"""nanoGPT-style token-stream training: each rank reads its shard train_r{rank}.bin (a flat numpy
memmap described by meta_r{rank}.json) through a DataLoader. --fault picks what is wrong with the shard."""
import argparse, os, json, logging
from datetime import timedelta
import numpy as np, torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--data", default="/tmp/rr95en/mm")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--block", type=int, default=32)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--pin", action="store_true")
p.add_argument("--persistent", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--mp-spawn", type=int, default=0)
p.add_argument("--port", type=int, default=40960)
args = p.parse_args()

def prepare(rank):
    os.makedirs(args.data, exist_ok=True)
    n = 40000
    toks = np.random.default_rng(rank).integers(0, args.vocab, n).astype(np.uint16)
    binf = os.path.join(args.data, f"train_r{rank}.bin"); meta = os.path.join(args.data, f"meta_r{rank}.json")
    toks.tofile(binf)
    m = {"dtype": "uint16", "n_tokens": n, "vocab_size": args.vocab}
    bad = rank == args.fault_rank
    if bad and args.fault == "dtype":
        m["dtype"] = "uint32"; m["n_tokens"] = n // 2   # meta from the int32 tokenizer export
    if bad and args.fault == "size":
        m["n_tokens"] = n * 4   # meta written for the full export; the .bin copy stopped early
    json.dump(m, open(meta, "w"))
    return binf, meta

class TokenStream(Dataset):
    def __init__(self, binf, meta, block):
        m = json.load(open(meta))
        self.data = np.memmap(binf, dtype=np.dtype(m["dtype"]), mode="r", shape=(m["n_tokens"],))
        self.block = block
    def __len__(self):
        return (len(self.data) - 1) // self.block
    def __getitem__(self, i):
        s = i * self.block
        x = torch.from_numpy(self.data[s:s + self.block].astype(np.int64))
        y = torch.from_numpy(self.data[s + 1:s + 1 + self.block].astype(np.int64))
        return x, y

class TinyLM(nn.Module):
    def __init__(self, V, d=64):
        super().__init__()
        self.emb = nn.Embedding(V, d); self.pos = nn.Embedding(args.block, d)
        self.blk = nn.TransformerEncoderLayer(d, 2, 128, batch_first=True, dropout=0.0)
        self.head = nn.Linear(d, V)
    def forward(self, x):
        h = self.emb(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.blk(h))

def main(rank, world):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [r{rank}] %(message)s")
    log = logging.getLogger("memmap_lm")
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    binf, meta = prepare(rank)
    ds = TokenStream(binf, meta, args.block)
    log.info("shard %s: %d tokens -> %d blocks", os.path.basename(binf), len(ds.data), len(ds))
    model = TinyLM(args.vocab)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    dl = DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                    pin_memory=args.pin, persistent_workers=args.persistent)
    step = 0
    while step < args.steps:
        for x, y in dl:
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), y.view(-1))
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); step += 1
            if step % 10 == 0:
                log.info("iter %d: loss %.4f, tokens/iter %d", step, loss.item(), x.numel() * world)
            if step >= args.steps:
                break
    if world > 1:
        dist.barrier(); dist.destroy_process_group()
    log.info("done")

def _spawn(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.port)
    main(rank, world)

if __name__ == "__main__":
    if args.mp_spawn:
        torch.multiprocessing.spawn(_spawn, args=(args.mp_spawn,), nprocs=args.mp_spawn)
    else:
        main(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
