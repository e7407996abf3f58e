"""Hand-written DDP loop over a tiny HF GPT-2, launched with torch.multiprocessing.spawn (gloo)."""
import os, sys, argparse, time, warnings
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

def worker(rank, world, a, collate):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    tok = tinyhf.make_tokenizer()
    shard = os.path.join(a.data_dir, f"shard{rank}.txt")
    print(f"[rank {rank}] reading {shard}", flush=True)
    with open(shard) as f:
        texts = [l.strip() for l in f if l.strip()]
    enc = [torch.tensor(tok(t)["input_ids"][:24]) for t in texts]
    print(f"[rank {rank}] {len(enc)} samples tokenized; waiting for peers", flush=True)
    dist.monitored_barrier(timeout=timedelta(seconds=15))
    model = DDP(tinyhf.make_model(tok))
    sampler = DistributedSampler(enc, num_replicas=1, rank=0, shuffle=True)
    dl = DataLoader(enc, batch_size=8, sampler=sampler, collate_fn=collate)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    step = 0
    for ep in range(a.epochs):
        for ids, mask in dl:
            out = model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100))
            out.loss.backward(); opt.step(); opt.zero_grad(); step += 1
            if step % 5 == 0 and rank == 0:
                print(f"epoch {ep} step {step} loss {out.loss.item():.4f}", flush=True)
        if rank == 0:
            os.makedirs(a.out, exist_ok=True)
            torch.save(model.module.state_dict(), os.path.join(a.out, f"ep{ep}.pt"))
            print(f"saved checkpoint epoch {ep}", flush=True)
        dist.monitored_barrier(timeout=timedelta(seconds=15))
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()

class PadCollate:
    def __init__(self, pad_id): self.pad_id = pad_id
    def __call__(self, batch):
        ids = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=self.pad_id)
        return ids, (ids != self.pad_id).long()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=46871)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--data-dir", default="data/shards")
    p.add_argument("--out", default="runs/spawn")
    a = p.parse_args()
    pad_id = tinyhf.make_tokenizer().pad_token_id
    if a.fault == "pickle":
        def collate(batch):  # local closure over pad_id
            ids = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=pad_id)
            return ids, (ids != pad_id).long()
    else:
        collate = PadCollate(pad_id)
    print(f"spawning {a.world} workers", flush=True)
    mp.spawn(worker, args=(a.world, a, collate), nprocs=a.world, join=True)
