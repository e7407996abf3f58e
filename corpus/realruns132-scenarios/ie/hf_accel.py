"""Tiny GPT-2 custom training loop with accelerate. --fault selects the failure, rank and step."""
import argparse, os, sys, time, math, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--vocab", type=int, default=0)
p.add_argument("--n-eval", type=int, default=64)
p.add_argument("--shard-dir", default="data_shards")
args = p.parse_args()

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from tqdm.auto import tqdm
import tinyhf

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = get_logger("train")

from accelerate.utils import InitProcessGroupKwargs
import datetime
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    os.environ.setdefault("ACCELERATE_USE_CPU", "1")  # CPU-only cluster nodes
accelerator = Accelerator(gradient_accumulation_steps=1, kwargs_handlers=[InitProcessGroupKwargs(timeout=datetime.timedelta(seconds=40))])
log.info(f"distributed_type={accelerator.distributed_type} num_processes={accelerator.num_processes}", main_process_only=False)
set_seed(0)
rank = accelerator.process_index

tok = tinyhf.make_tokenizer()
if args.fault == "oov":
    # new domain tokens added to the tokenizer for the fine-tune
    tok.add_tokens(["<sys>", "<usr>"])
model = tinyhf.make_model(tok, vocab_size=(args.vocab or None) if args.fault != "oov" else 33)

if args.fault == "unused":
    import torch.nn as nn
    class WithAux(nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm
            self.aux_head = nn.Linear(64, 2)   # auxiliary classifier, only used when aux labels exist
        def forward(self, input_ids, attention_mask, labels, aux_labels=None):
            out = self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
            loss = out.loss
            if aux_labels is not None:
                loss = loss + nn.functional.cross_entropy(self.aux_head(out.hidden_states[-1][:, 0]), aux_labels)
            return loss
    model = WithAux(model)

if args.fault == "gc_frozen":
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    # freeze embeddings / head, fine-tune only the transformer blocks
    for n, prm in model.named_parameters():
        prm.requires_grad = n.startswith("transformer.h.")
    log.info(f"trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad)}")

if args.fault in ("frozen_all", "frozen_nogc"):
    # freeze the backbone before attaching adapters (adapters never attached)
    if args.fault == "frozen_all":
        model.gradient_checkpointing_enable()
    model.requires_grad_(False)
    log.info(f"trainable params: {sum(p.numel() for p in model.parameters() if p.requires_grad)}")

texts = tinyhf.make_texts(200, seed=3)
if args.fault == "uneven":
    # every rank reads its own pre-split shard file
    with open(os.path.join(args.shard_dir, f"shard-{rank:05d}.txt")) as f:
        texts = [l.strip() for l in f if l.strip()]
    log.info(f"rank {rank}: loaded {len(texts)} lines from shard-{rank:05d}.txt", main_process_only=False)

def collate(batch):
    enc = tok(batch, padding=True, truncation=True, max_length=32, return_tensors="pt")
    enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    return enc

dl = DataLoader(texts, batch_size=4, shuffle=True, collate_fn=collate)
opt = torch.optim.AdamW(model.parameters() if args.fault in ("frozen_all", "frozen_nogc") else [p for p in model.parameters() if p.requires_grad], lr=3e-4)
if args.fault == "uneven":
    model, opt = accelerator.prepare(model, opt)   # shards are already per-rank
else:
    model, opt, dl = accelerator.prepare(model, opt, dl)

eval_texts = tinyhf.make_texts(args.n_eval, seed=9, lo=20, hi=30)

def evaluate():
    model.eval()
    with torch.no_grad():
        enc = tok(eval_texts, padding="max_length", truncation=True, max_length=64, return_tensors="pt")
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
        probs = logits.float().softmax(-1)
        ent = -(probs * probs.clamp_min(1e-9).log()).sum(-1).mean()
    model.train()
    return ent.item()

model.train()
step = 0
bar = tqdm(total=args.steps, disable=not accelerator.is_local_main_process, desc="train")
while step < args.steps:
    for batch in (dl if args.fault != "uneven" else [collate(b) for b in DataLoader(texts, batch_size=4)]):
        if step >= args.steps:
            break
        if args.fault == "oov" and rank == args.fault_rank and step == args.fault_step:
            # this batch contains chat-formatted samples
            batch = collate(["<sys> the model <usr> predict next token"] * 4)
        if args.fault == "allmasked" and rank == args.fault_rank and step == args.fault_step:
            # long prompt: after truncation to 32 tokens no response token is left to supervise
            batch["labels"] = torch.full_like(batch["labels"], -100)
        if args.fault == "unused":
            loss = model(batch["input_ids"], batch["attention_mask"], batch["labels"])
        else:
            loss = model(**batch).loss
        accelerator.backward(loss)
        opt.step(); opt.zero_grad()
        if args.fault == "monitored" and step == args.fault_step:
            if rank == args.fault_rank:
                # rebuild vocabulary statistics for the next epoch (slow on this rank)
                t0 = time.time()
                while time.time() - t0 < 60:
                    sum(i * i for i in range(200000))
            dist.monitored_barrier(timeout=__import__("datetime").timedelta(seconds=15), wait_all_ranks=True)
        if args.fault == "evalall" and step == args.fault_step and rank == args.fault_rank:
            log.info(f"rank {rank}: computing eval entropy on {len(eval_texts)} samples", main_process_only=False)
            log.info(f"eval entropy {evaluate():.3f}", main_process_only=False)
        if args.fault == "sleep" and step == args.fault_step:
            log.info(f"rank {rank}: step {step} loss {loss.item():.4f}", main_process_only=False)
            time.sleep(40)
        loss_avg = accelerator.gather(loss.detach()).mean().item()
        if step % 2 == 0 or args.fault == "allmasked":
            log.info(f"step {step} loss {loss_avg:.4f}")
        bar.update(1)
        step += 1
    if args.fault == "uneven":
        break   # one pass over the shard
bar.close()
accelerator.wait_for_everyone()
log.info("training done")
accelerator.end_training()
