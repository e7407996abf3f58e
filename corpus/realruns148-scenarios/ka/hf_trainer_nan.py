"""HF Trainer on a tiny GPT2 built from config; --fault: none | fp16_scale (custom loss in log-space
without clamping: log of a softmax prob that underflows -> -inf -> nan)"""
import argparse, os, math, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--outdir", default="/work/rr148/ka/out_hf")
a = p.parse_args()
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)
class DS(torch.utils.data.Dataset):
    def __len__(self): return 256
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 128, (32,), generator=g)
        return {"input_ids": ids, "labels": ids.clone()}
class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        out = model(input_ids=inputs["input_ids"])
        logits = out.logits[:, :-1].float()
        tgt = inputs["labels"][:, 1:]
        # "sharpened" distillation-style loss: temperature tau, probability then log (no log_softmax)
        tau = 1.0 if a.fault == "none" else 1e-3
        probs = torch.softmax(logits / tau, -1)
        p_t = probs.gather(-1, tgt[..., None]).squeeze(-1)
        loss = -torch.log(p_t).mean() * tau
        return (loss, out) if return_outputs else loss
args = TrainingArguments(output_dir=a.outdir, per_device_train_batch_size=8, max_steps=a.steps,
    logging_steps=2, learning_rate=5e-3, report_to=[], save_strategy="no", use_cpu=True,
    logging_nan_inf_filter=False, dataloader_num_workers=0, disable_tqdm=False)
tr = MyTrainer(model=model, args=args, train_dataset=DS())
tr.train()
print("train finished")
