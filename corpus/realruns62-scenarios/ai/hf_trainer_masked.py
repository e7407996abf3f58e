"""Tiny GPT-2 SFT with HF Trainer on a locally built dataset. --fault masked: one example whose prompt fills
the whole max_length, so after truncation every label is -100 (prompt masking)."""
import argparse, os, random
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-index", type=int, default=11)
p.add_argument("--bf16", action="store_true")
p.add_argument("--steps", type=int, default=24)
p.add_argument("--lr", type=float, default=5e-4)
a = p.parse_args()
MAXLEN = 32
rng = random.Random(0)
class SFT(torch.utils.data.Dataset):
    def __init__(self, n=64):
        self.rows = []
        for i in range(n):
            plen = rng.randint(4, 12)
            if a.fault == "masked" and i == a.bad_index:
                plen = 40  # very long system prompt
            prompt = [rng.randint(5, 199) for _ in range(plen)]
            answer = [rng.randint(5, 199) for _ in range(rng.randint(6, 14))]
            ids = (prompt + answer)[:MAXLEN]
            labels = ([-100] * len(prompt) + answer)[:MAXLEN]
            ids += [0] * (MAXLEN - len(ids)); labels += [-100] * (MAXLEN - len(labels))
            self.rows.append({"input_ids": torch.tensor(ids), "labels": torch.tensor(labels)})
    def __len__(self): return len(self.rows)
    def __getitem__(self, i): return self.rows[i]
model = GPT2LMHeadModel(GPT2Config(vocab_size=200, n_layer=2, n_embd=64, n_head=4, n_positions=64))
args = TrainingArguments(output_dir="/tmp/ai_hf_out", per_device_train_batch_size=1, max_steps=a.steps, logging_steps=1,
                         learning_rate=a.lr, report_to=[], save_strategy="no", use_cpu=True, bf16=a.bf16,
                         dataloader_num_workers=0, seed=0, disable_tqdm=False)
tr = Trainer(model=model, args=args, train_dataset=SFT())
tr.train()
print("done; final global step", tr.state.global_step)
