"""Tiny GPT-2 (built from a config, nothing downloaded) fine-tuned with the HF Trainer on a
locally generated instruction-style dataset.

--fault none          healthy; compute_metrics reports accuracy on a token subset that may be empty
--fault long_prompt   some examples have prompts longer than --max-len, so every label is -100
--fault high_lr       (run with large --lr, --max-grad-norm 0, --warmup 0)
"""
import argparse, math, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
import torch
from datasets import Dataset
from transformers import (GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          default_data_collator, set_seed)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--max-grad-norm", type=float, default=1.0)
p.add_argument("--warmup", type=int, default=30)
p.add_argument("--max-steps", type=int, default=300)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--max-len", type=int, default=32)
p.add_argument("--n", type=int, default=2000)
p.add_argument("--frac-long", type=float, default=0.2)
p.add_argument("--out", default="/work/rr78/cc/tmp/hf_out")
p.add_argument("--seed", type=int, default=42)
args = p.parse_args()

VOCAB = 400
set_seed(args.seed)
rng = np.random.RandomState(0)


def example(i):
    # "prompt" tokens then "response" tokens; labels only on the response
    plen = rng.randint(4, 12)
    if args.fault in ("long_prompt", "long_prompt_custom") and rng.rand() < args.frac_long:
        plen = rng.randint(args.max_len + 1, args.max_len + 30)  # long context documents
    rlen = rng.randint(6, 16)
    start, stride = rng.randint(1, VOCAB - 10), rng.randint(1, 5)
    prompt = [int(x) for x in rng.randint(1, VOCAB, plen)]
    resp = [(start + stride * k) % (VOCAB - 2) + 1 for k in range(rlen)]
    ids = prompt + resp
    labels = [-100] * plen + resp
    ids, labels = ids[: args.max_len], labels[: args.max_len]  # truncation (right side)
    pad = args.max_len - len(ids)
    return {"input_ids": ids + [0] * pad, "attention_mask": [1] * len(ids) + [0] * pad,
            "labels": labels + [-100] * pad}


train = Dataset.from_list([example(i) for i in range(args.n)])
evald = Dataset.from_list([example(i) for i in range(64)])

cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                 bos_token_id=1, eos_token_id=2, pad_token_id=0)
model = GPT2LMHeadModel(cfg)

RARE = {399}  # "code" tokens, reported separately


def preprocess_logits_for_metrics(logits, labels):
    return logits.argmax(-1)


def compute_metrics(ev):
    preds, labels = ev.predictions[:, :-1], ev.label_ids[:, 1:]
    m = labels != -100
    acc = float((preds[m] == labels[m]).mean())
    rare = np.isin(labels, list(RARE)) & m
    rare_acc = float(np.mean(preds[rare] == labels[rare]))  # empty when no rare tokens in eval
    return {"token_acc": acc, "rare_token_acc": rare_acc}


targs = TrainingArguments(
    output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=args.bs,
    per_device_eval_batch_size=16, learning_rate=args.lr, warmup_steps=args.warmup,
    max_grad_norm=args.max_grad_norm, logging_steps=10, eval_strategy="steps", eval_steps=100,
    save_strategy="no", report_to="none", use_cpu=True, dataloader_num_workers=0,
    seed=args.seed, disable_tqdm=os.environ.get("DISABLE_TQDM", "1") == "1",
)
class MaskedLossTrainer(Trainer):
    """Token-level loss averaged over response tokens (custom, instead of the model's loss)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        out = model(**inputs)
        logits = out.logits[:, :-1].float()
        tgt = labels[:, 1:]
        mask = (tgt != -100).float()
        tok = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.clamp(min=0).reshape(-1),
                                                reduction="none").view_as(mask)
        loss = (tok * mask).sum() / mask.sum()
        return (loss, out) if return_outputs else loss


TrainerCls = MaskedLossTrainer if args.fault == "long_prompt_custom" else Trainer
trainer = TrainerCls(model=model, args=targs, train_dataset=train, eval_dataset=evald,
                  data_collator=default_data_collator, compute_metrics=compute_metrics,
                  preprocess_logits_for_metrics=preprocess_logits_for_metrics)
trainer.train()
print(trainer.evaluate())
if torch.distributed.is_initialized():
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
