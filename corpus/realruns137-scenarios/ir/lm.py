"""Tiny GPT-2 LM fine-tune under DDP (gloo/CPU). Faults: embed_oor, label_key, none.
Tokenizer: byte-level ids 0..255 plus added specials <bos>=256 <eos>=257 <pad>=258."""
import argparse, os, sys, time, math, logging
from datetime import timedelta
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--accel", action="store_true")
args = p.parse_args()

SPECIAL = {"<bos>": 256, "<eos>": 257, "<pad>": 258}
def encode(text):
    # byte-level, with the tokenizer's added special tokens mapped to ids 256+
    ids, i = [], 0
    while i < len(text):
        for tok, tid in SPECIAL.items():
            if text.startswith(tok, i):
                ids.append(tid); i += len(tok); break
        else:
            ids.extend(text[i].encode("utf-8")); i += 1
    return ids

def make_corpus(fault):
    docs = []
    for i in range(200):
        d = ("the quick brown fox jumps over the lazy dog %03d " % i) * 2
        if fault == "embed_oor" and i % 100 == 57:
            d = "q: who jumps? a: the fox<eos>q: who sleeps? a: the dog %03d<eos>" % i   # chat-formatted sample
        docs.append(d)
    return docs

class LMData(Dataset):
    def __init__(self, rank, fault):
        self.docs = make_corpus(fault)
    def __len__(self):
        return len(self.docs)
    def __getitem__(self, i):
        ids = encode(self.docs[i])
        ids = (ids + [32] * 32)[:32]
        return torch.tensor(ids)

def collate(items, key="labels"):
    x = torch.stack(items)
    return {"input_ids": x, "attention_mask": torch.ones_like(x), key: x.clone()}

def main():
    if args.accel:
        from accelerate import Accelerator
        acc = Accelerator()
        print(f"[accelerate] distributed_type={acc.distributed_type} num_processes={acc.num_processes} process_index={acc.process_index}", flush=True)
        rank, world = acc.process_index, acc.num_processes
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s - rank{rank} - %(levelname)s - %(name)s - %(message)s")
    log = logging.getLogger("finetune")
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=SPECIAL["<bos>"], eos_token_id=SPECIAL["<eos>"])
    model = GPT2LMHeadModel(cfg)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable()
    model.train()
    ds = LMData(rank, args.fault)
    key = "label" if args.fault == "label_key" else "labels"
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    sched = get_linear_schedule_with_warmup(opt, 2, args.steps)
    if args.accel:
        dl = DataLoader(ds, batch_size=8, shuffle=False, collate_fn=lambda b: collate(b, key))
        model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    else:
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
        dl = DataLoader(ds, batch_size=8, sampler=sampler, collate_fn=lambda b: collate(b, key))
        model = DDP(model)
    log.info("vocab_size=%d n_params=%d world=%d steps=%d", cfg.vocab_size, sum(p.numel() for p in model.parameters()), world, args.steps)
    t0 = time.time()
    for step, batch in enumerate(dl):
        out = model(**batch)
        loss = out.loss
        if args.accel:
            acc.backward(loss)
        else:
            loss.backward()
        opt.step(); sched.step(); opt.zero_grad()
        if step % 2 == 0:
            log.info("step %d loss %.4f ppl %.1f lr %.2e (%.2fs)", step, loss.item(), math.exp(loss.item()), sched.get_last_lr()[0], time.time() - t0)
        if step + 1 >= args.steps:
            break
    log.info("done, saving to ./out-lm (rank0)")
    if args.accel:
        acc.wait_for_everyone()
    else:
        dist.barrier(); dist.destroy_process_group()

if __name__ == "__main__":
    main()
