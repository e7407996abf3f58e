"""Tiny GPT-2 SFT with the HF Trainer (offline, model built from a config).

--fault none | masked   (masked: some examples have the completion truncated away -> all labels -100)
"""
import argparse
import os
import warnings

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, set_seed

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out-dir", default="hf_out")
p.add_argument("--max-len", type=int, default=32)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--fp16", action="store_true")
p.add_argument("--nan-filter", action="store_true")
args = p.parse_args()

set_seed(0)
VOCAB = 128


class SFTData(torch.utils.data.Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.items = []
        for i in range(n):
            prompt_len = int(torch.randint(4, 12, (1,), generator=g))
            if args.fault == "masked" and i % 16 == 5:
                prompt_len = 60  # very long instruction: the answer falls beyond max_len
            comp_len = 8
            ids = torch.randint(3, VOCAB, (prompt_len + comp_len,), generator=g)
            labels = ids.clone()
            labels[:prompt_len] = -100  # train on the completion only
            ids, labels = ids[: args.max_len], labels[: args.max_len]
            pad = args.max_len - len(ids)
            attn = torch.cat([torch.ones(len(ids)), torch.zeros(pad)]).long()
            ids = torch.cat([ids, torch.zeros(pad, dtype=torch.long)])
            labels = torch.cat([labels, torch.full((pad,), -100)])
            self.items.append({"input_ids": ids, "attention_mask": attn, "labels": labels})

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class MeanLossTrainer(Trainer):
    """Per-sequence token-mean loss (each example weighted equally)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        logits = out.logits[:, :-1].float()
        tgt = labels[:, 1:]
        tok = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), ignore_index=-100, reduction="none"
        ).view(tgt.shape)
        valid = (tgt != -100).float()
        per_seq = (tok * valid).sum(1) / valid.sum(1)
        loss = per_seq.mean()
        return (loss, out) if return_outputs else loss


cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(
    output_dir=args.out_dir,
    per_device_train_batch_size=4,
    max_steps=args.steps,
    learning_rate=args.lr,
    warmup_steps=args.warmup,
    logging_steps=1,
    save_strategy="no",
    report_to=[],
    use_cpu=True,
    fp16=args.fp16,
    logging_nan_inf_filter=args.nan_filter,
    dataloader_num_workers=0,
    ddp_backend="gloo",
    seed=0,
)
trainer = MeanLossTrainer(model=model, args=targs, train_dataset=SFTData())
trainer.train()
if trainer.is_world_process_zero():
    print("final log_history tail:", trainer.state.log_history[-2:])
