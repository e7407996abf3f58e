"""Tiny GPT-2 pipeline: pretrain LM briefly, save_pretrained, then load a classification head
from that checkpoint and fine-tune (single process, offline, local tiny tokenizer-free data)."""
import argparse
import os

import torch
from tqdm import tqdm
from transformers import GPT2Config, GPT2ForSequenceClassification, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_warning()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="hf_out")
    p.add_argument("--lm-steps", type=int, default=30)
    p.add_argument("--cls-steps", type=int, default=30)
    p.add_argument("--safe", type=int, default=1)
    a = p.parse_args()
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64, pad_token_id=0)
    lm = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(lm.parameters(), lr=5e-4)
    for step in tqdm(range(a.lm_steps), desc="lm-pretrain", mininterval=0.3):
        ids = torch.randint(1, 256, (8, 32))
        out = lm(input_ids=ids, labels=ids)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    print(f"lm loss after {a.lm_steps} steps: {out.loss.item():.4f}", flush=True)
    lm.save_pretrained(os.path.join(a.out, "lm"), safe_serialization=bool(a.safe))
    print("saved", sorted(os.listdir(os.path.join(a.out, "lm"))), flush=True)

    clf = GPT2ForSequenceClassification.from_pretrained(os.path.join(a.out, "lm"), num_labels=3)
    opt = torch.optim.AdamW(clf.parameters(), lr=5e-4)
    for step in tqdm(range(a.cls_steps), desc="cls-finetune", mininterval=0.3):
        ids = torch.randint(1, 256, (8, 24))
        ids[:4, 20:] = 0  # padded tail
        labels = ids[:, 0] % 3
        out = clf(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    print(f"cls loss after {a.cls_steps} steps: {out.loss.item():.4f}", flush=True)
    clf.save_pretrained(os.path.join(a.out, "cls"))
    print("done", flush=True)


if __name__ == "__main__":
    main()
