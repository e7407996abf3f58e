"""Tiny causal-LM SFT with the Hugging Face Trainer (offline, model built from a config).

--fault none        prompts fit in max_len: healthy run
--fault truncate    some prompts are longer than max_len: after truncation the example has no
                    answer tokens left, every label is -100
"""
import argparse
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "truncate"])
p.add_argument("--max-len", type=int, default=32)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--out", default="/work/rr143/jp/out/hf")
p.add_argument("--bs", type=int, default=2)
p.add_argument("--nan-filter", type=int, default=0)
args = p.parse_args()

random.seed(0)
torch.manual_seed(0)
VOCAB = 128


class SFTData(torch.utils.data.Dataset):
    def __init__(self, n=200):
        self.items = []
        for i in range(n):
            if args.fault == "truncate" and i % 3 == 0:
                plen = random.randint(args.max_len + 2, args.max_len + 20)   # long system prompt
            else:
                plen = random.randint(6, 14)
            alen = random.randint(6, 12)
            prompt = [random.randint(3, VOCAB - 1) for _ in range(plen)]
            answer = [(t * 7) % (VOCAB - 3) + 3 for t in prompt[:alen]]
            ids = (prompt + [2] + answer + [1])[: args.max_len]
            labels = ([-100] * (plen + 1) + answer + [1])[: args.max_len]
            pad = args.max_len - len(ids)
            self.items.append(dict(input_ids=torch.tensor(ids + [0] * pad),
                                   attention_mask=torch.tensor([1] * len(ids) + [0] * pad),
                                   labels=torch.tensor(labels + [-100] * pad)))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_layer=2, n_head=2, n_embd=64)
model = GPT2LMHeadModel(cfg)
targs = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=args.bs,
    learning_rate=5e-4, logging_steps=2, save_strategy="no", report_to=[],
    logging_nan_inf_filter=bool(args.nan_filter), use_cpu=True, dataloader_num_workers=0,
    disable_tqdm=False,
)
trainer = Trainer(model=model, args=targs, train_dataset=SFTData())
trainer.train()
print("final log_history tail:", trainer.state.log_history[-2:])
