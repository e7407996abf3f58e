"""Tiny GPT-2 trained with the HF Trainer (bf16/fp16/fp32) on a locally built dataset."""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--prec", default="fp32")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--out", default="/work/rr133/if/tmp/hf_out")
p.add_argument("--lrate", type=float, default=5e-4)
args = p.parse_args()

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)

g = torch.Generator().manual_seed(1)
rows = []
for i in range(256):
    ids = torch.randint(1, 128, (32,), generator=g)
    ids[16:] = ids[:16]  # learnable: second half repeats first half
    rows.append({"input_ids": ids.tolist(), "labels": ids.tolist(), "weight": float(0.0 if (args.fault == "weight_div" and i % 4 == 0) else 1.0)})
ds = Dataset.from_list(rows)


class WeightedTrainer(Trainer):
    """per-example weighted LM loss: loss = sum(w_i * l_i) / sum(w_i)"""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        w = inputs.pop("weight")
        out = model(input_ids=inputs["input_ids"])
        logits = out.logits[:, :-1].float()
        tgt = inputs["labels"][:, 1:]
        tok = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1),
                                                reduction="none").view(tgt.shape)
        per_ex = tok.mean(1)
        if args.fault == "weight_div":
            loss = (w * per_ex).sum() / w.sum()  # batches where every weight is 0 -> 0/0
        else:
            loss = (w * per_ex).sum() / w.sum().clamp_min(1.0)
        return (loss, out) if return_outputs else loss


kw = dict(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.steps, logging_steps=2,
          learning_rate=args.lrate, report_to=[], save_strategy="no", use_cpu=True,
          dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=False)
if args.prec == "bf16":
    kw["bf16"] = True
if args.prec == "fp16":
    kw["fp16"] = True
if args.fault == "weight_div":
    kw["logging_nan_inf_filter"] = False
    kw["logging_steps"] = 1
if args.fault == "weight_div":
    kw["per_device_train_batch_size"] = 2
targs = TrainingArguments(**kw)
trainer = WeightedTrainer(model=model, args=targs, train_dataset=ds)
res = trainer.train()
print(res)
