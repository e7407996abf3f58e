"""Tiny GPT-2 trained with the HF Trainer under torchrun (gloo, CPU), random token data built locally."""
import os, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Toks(torch.utils.data.Dataset):
    def __init__(self, n=256, L=32, V=256):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, V, (n, L), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir="hf_out", max_steps=20, per_device_train_batch_size=8, logging_steps=5,
                         save_steps=10, save_total_limit=1, report_to=[], use_cpu=True, ddp_backend="gloo",
                         learning_rate=3e-4, dataloader_num_workers=0)
tr = Trainer(model=model, args=args, train_dataset=Toks())
tr.train()
if tr.is_world_process_zero():
    print("saved:", sorted(os.listdir("hf_out")))
