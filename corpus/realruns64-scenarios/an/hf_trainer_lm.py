"""Tiny GPT-2 causal LM trained with the HF Trainer on a locally generated token dataset (no downloads)."""
import argparse, os
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=5e-4)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--bf16", action="store_true")
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--max-grad-norm", type=float, default=1.0)
p.add_argument("--init-std", type=float, default=0.02)
p.add_argument("--out", default="/work/rr64/an/out/hf")
args = p.parse_args()

V, T = 128, 32
class TokDS(torch.utils.data.Dataset):
    def __len__(self): return 512
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        start, stride = torch.randint(0, V, (1,), generator=g), torch.randint(1, 5, (1,), generator=g)
        ids = (start + stride * torch.arange(T)) % V
        return {"input_ids": ids, "labels": ids.clone(), "attention_mask": torch.ones(T, dtype=torch.long)}

cfg = GPT2Config(vocab_size=V, n_positions=T, n_layer=2, n_head=2, n_embd=64, initializer_range=args.init_std,
                 bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=8, learning_rate=args.lr, max_steps=args.steps,
                          warmup_steps=args.warmup, logging_steps=2, save_strategy="no", report_to="none", use_cpu=True,
                          bf16=args.bf16, max_grad_norm=args.max_grad_norm, dataloader_num_workers=0, seed=0,
                          disable_tqdm=False)
trainer = Trainer(model=model, args=targs, train_dataset=TokDS())
trainer.train()
