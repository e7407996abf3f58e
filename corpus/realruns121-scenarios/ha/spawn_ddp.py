"""DDP fine-tune of a tiny GPT-2 (GPT-2-sized vocab) started with torch.multiprocessing.spawn.

--eval-mode full   : rank 0 scores the whole held-out set in one forward pass after each epoch
--eval-mode batched: held-out set scored in mini-batches
"""
import argparse, os, sys, time, math
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, sentences

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps-per-epoch", type=int, default=40)
p.add_argument("--eval-mode", default="batched")
p.add_argument("--eval-rows", type=int, default=4096)
p.add_argument("--port", default="45670")
p.add_argument("--pid-dir", default=None)
a = p.parse_args()

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def log(rank, msg):
    print(f"[{time.strftime('%H:%M:%S')}] [rank {rank}] {msg}", flush=True)


def worker(rank, world, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = a.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    if a.pid_dir:
        os.makedirs(a.pid_dir, exist_ok=True)
        with open(os.path.join(a.pid_dir, f"rank{rank}.pid"), "w") as f:
            f.write(str(os.getpid()))
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    tok = make_tokenizer(pad=True)
    cfg = GPT2Config(vocab_size=50257, n_positions=64, n_layer=2, n_embd=64, n_head=4,
                     pad_token_id=tok.pad_token_id)
    model = DDP(GPT2LMHeadModel(cfg))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    train = sentences(2000, seed=20 + rank)
    held = tok(sentences(a.eval_rows, seed=99), padding="max_length", truncation=True,
               max_length=64, return_tensors="pt")
    for ep in range(a.epochs):
        model.train()
        t0 = time.time()
        for s in range(a.steps_per_epoch):
            i = (ep * a.steps_per_epoch + s) * 8 % 1990
            b = tok(train[i:i + 8], padding=True, return_tensors="pt")
            out = model(**b, labels=b["input_ids"].masked_fill(b["attention_mask"] == 0, -100))
            out.loss.backward(); opt.step(); opt.zero_grad()
            if s % 10 == 0:
                log(rank, f"epoch {ep} step {s:3d} loss {out.loss.item():.4f} "
                          f"({(s + 1) / (time.time() - t0):.1f} it/s)")
        if rank == 0:
            model.eval()
            with torch.no_grad():
                if a.eval_mode == "full":
                    out = model.module(**held, labels=held["input_ids"])
                    val = out.loss.item()
                else:
                    tot = 0.0
                    for j in range(0, len(held["input_ids"]), 64):
                        bb = {k: v[j:j + 64] for k, v in held.items()}
                        tot += model.module(**bb, labels=bb["input_ids"]).loss.item()
                    val = tot / math.ceil(len(held["input_ids"]) / 64)
            log(rank, f"epoch {ep} eval loss {val:.4f} ppl {math.exp(val):.1f}")
        dist.barrier()
    log(rank, "done")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)
