"""Tiny GPT-2 causal-LM fine-tune with a locally built word-level tokenizer (no downloads).

Runs under torchrun (DDP, gloo) or as a single process (plain python).
Faults (--fault, on --fault-rank where it applies):
  none       healthy (gradient checkpointing + use_cache, tokenizer used before DataLoader workers fork)
  newtokens  chat special tokens added to the tokenizer after the model was built (no resize_token_embeddings);
             only the fault rank's shard contains chat-formatted text
  savewrap   rank 0 calls save_pretrained on the DDP wrapper at the end of epoch 0
  nopad      batches tokenized with padding=True but the tokenizer has no pad token
  trainer    HF Trainer with --trainer-args-json passed to TrainingArguments
"""
import argparse
import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--chat-every", type=int, default=3, help="every k-th sample of the fault rank is chat formatted")
p.add_argument("--out", default="out")
p.add_argument("--trainer-args-json", default=None)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

WORDS = ("the a model learns to predict next token from context and loss goes down when training "
         "runs long enough with small learning rate on cpu data shard batch step epoch").split()


def build_tokenizer():
    vocab = {"<unk>": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>")
    if args.fault != "nopad":
        tok.pad_token = tok.eos_token
    return tok


def make_texts(r, n):
    g = torch.Generator().manual_seed(100 + r)
    texts = []
    for i in range(n):
        k = int(torch.randint(6, 14, (1,), generator=g))
        idx = torch.randint(0, len(WORDS), (k,), generator=g).tolist()
        t = " ".join(WORDS[j] for j in idx)
        if args.fault == "newtokens" and r == args.fault_rank and i % args.chat_every == 0:
            t = f"<|user|> {t} <|assistant|> {WORDS[idx[0]]}"
        texts.append(t)
    return texts


tok = build_tokenizer()
cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
if args.fault == "newtokens":
    # chat fine-tune: register chat markers as special tokens (forgot model.resize_token_embeddings)
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>"]})
if args.grad_ckpt:
    model.gradient_checkpointing_enable()
    model.config.use_cache = True

texts = make_texts(rank, args.steps * args.batch_size)

if args.fault == "trainer":
    from datasets import Dataset as HFDataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

    ds = HFDataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=32),
                                                   batched=True, remove_columns=["text"])
    targs = dict(output_dir=args.out, per_device_train_batch_size=args.batch_size, num_train_epochs=1,
                 logging_steps=2, report_to=[], use_cpu=True, ddp_backend="gloo" if distributed else None)
    targs.update(json.loads(args.trainer_args_json or "{}"))
    training_args = TrainingArguments(**targs)
    trainer = Trainer(model=model, args=training_args, train_dataset=ds, eval_dataset=ds,
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    trainer.train()
    sys.exit(0)

# warm the tokenizer (fast tokenizer parallelism) before the DataLoader forks workers
_ = tok(texts[:16], padding=True)


def collate(batch):
    enc = tok(batch, padding=True, truncation=True, max_length=32, return_tensors="pt")
    labels = enc["input_ids"].clone()
    labels[enc["attention_mask"] == 0] = -100
    enc["labels"] = labels
    return enc


if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(model)
else:
    ddp = model
opt = torch.optim.AdamW(ddp.parameters(), lr=5e-4)
dl = DataLoader(texts, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, collate_fn=collate)
if rank == 0:
    print(f"vocab={len(tok)} params={sum(p.numel() for p in model.parameters())} world={world}")
step = 0
for epoch in range(args.epochs):
    for batch in dl:
        out = ddp(**batch)
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        if rank == 0 and step % 3 == 0:
            print(f"epoch={epoch} step={step} loss={out.loss.item():.4f}")
        step += 1
    if rank == 0:
        if args.fault == "savewrap":
            ddp.save_pretrained(os.path.join(args.out, f"epoch{epoch}"))
        else:
            model.save_pretrained(os.path.join(args.out, f"epoch{epoch}"))
            tok.save_pretrained(os.path.join(args.out, f"epoch{epoch}"))
        print(f"saved {args.out}/epoch{epoch}")
    if distributed:
        dist.barrier()
if rank == 0:
    print("done")
if distributed:
    dist.destroy_process_group()
