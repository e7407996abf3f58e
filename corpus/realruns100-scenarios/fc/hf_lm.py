"""Tiny GPT-2 LM fine-tune loop (local tokenizer, no downloads), plain python or `accelerate launch`."""
import argparse
import logging
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from tqdm.auto import tqdm
from accelerate import Accelerator
from accelerate.logging import get_logger
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--bs", type=int, default=4)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger("hf_lm")

TEXT = [
    "the quick brown fox jumps over the lazy dog",
    "a training run that prints warnings is not always broken",
    "gradient accumulation and mixed precision are common settings",
    "the loss should go down slowly on this tiny corpus",
    "checkpoints are written every few hundred steps",
    "distributed data parallel replicates the model on each rank",
] * 20


def build_tokenizer():
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(TEXT, trainers.WordLevelTrainer(special_tokens=["[UNK]", "<|endoftext|>"]))
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="<|endoftext|>",
                                     bos_token="<|endoftext|>")
    if args.fault != "no_pad":
        hf_tok.pad_token = hf_tok.eos_token
    return hf_tok


def main():
    acc = Accelerator()
    logger.info(acc.state, main_process_only=False)
    tok = build_tokenizer()
    cfg = GPT2Config(vocab_size=len(tok), n_positions=64, n_layer=2, n_head=2, n_embd=64,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    logger.info(f"model: {sum(p.numel() for p in model.parameters())/1e3:.1f}K params, vocab {len(tok)}")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model, opt = acc.prepare(model, opt)
    model.train()
    bar = tqdm(range(args.steps), disable=not acc.is_local_main_process, ncols=90)
    for step in bar:
        lines = [TEXT[(step * args.bs + i + acc.process_index * 7) % len(TEXT)] for i in range(args.bs)]
        batch = tok(lines, return_tensors="pt", padding=True)
        out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        bar.set_postfix(loss=f"{out.loss.item():.3f}")
        if (step + 1) % 10 == 0:
            logger.info(f"step {step+1} loss {out.loss.item():.4f}")
    acc.wait_for_everyone()
    if acc.is_main_process:
        m = acc.unwrap_model(model)
        m.eval()
        ids = tok("the quick", return_tensors="pt").input_ids
        gen = m.generate(ids, max_new_tokens=8, do_sample=False)
        logger.info("sample: " + tok.decode(gen[0]))
    acc.end_training()


if __name__ == "__main__":
    main()
