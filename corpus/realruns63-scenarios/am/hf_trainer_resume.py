"""Tiny GPT-2 trained with HF Trainer, periodic checkpoints, resume_from_checkpoint.
Flags: --out DIR, --resume {none,true,<path>}, --n-embd, --n-layer, --max-steps, --save-steps,
       --save-only-model, --bad-opt (extra param group on resume via custom optimizer)."""
import argparse, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--resume", default="none")
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--max-steps", type=int, default=20)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--save-only-model", action="store_true")
p.add_argument("--log-steps", type=int, default=5)
args = p.parse_args()


class Toy(Dataset):
    def __init__(self, n=512, L=32, vocab=256):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, L), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


cfg = GPT2Config(vocab_size=256, n_positions=64, n_embd=args.n_embd, n_layer=args.n_layer, n_head=4)
model = GPT2LMHeadModel(cfg)
ta = TrainingArguments(output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=8,
                       logging_steps=args.log_steps, save_steps=args.save_steps, report_to=[],
                       use_cpu=True, dataloader_num_workers=0, disable_tqdm=False,
                       save_only_model=args.save_only_model, ddp_backend=("gloo" if "RANK" in os.environ else None),
                       ddp_timeout=60, learning_rate=5e-4)
trainer = Trainer(model=model, args=ta, train_dataset=Toy())
resume = {"none": None, "true": True}.get(args.resume, args.resume)
trainer.train(resume_from_checkpoint=resume)
if trainer.is_world_process_zero():
    print("final checkpoints:", sorted(d for d in os.listdir(args.out) if d.startswith("checkpoint")))
