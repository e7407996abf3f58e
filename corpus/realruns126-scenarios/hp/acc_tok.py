"""GPT-2 style causal-LM fine-tune with accelerate and a locally trained BPE tokenizer.

accelerate launch --multi_gpu --num_processes 2 acc_tok.py --fault none
"""
import argparse
import logging
import os

import torch
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--vocab", type=int, default=300)
p.add_argument("--model-vocab", type=int, default=300)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--tokdir", default="runs/tok")
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def corpus(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        L = int(torch.randint(4, 24, (1,), generator=g))
        out.append(" ".join(WORDS[int(i)] for i in torch.randint(0, len(WORDS), (L,), generator=g)))
    return out


def build_tokenizer(accelerator):
    path = os.path.join(args.tokdir, "tokenizer.json")
    with accelerator.main_process_first():
        if not os.path.exists(path):
            os.makedirs(args.tokdir, exist_ok=True)
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = decoders.ByteLevel()
            tr = trainers.BpeTrainer(vocab_size=args.vocab, special_tokens=["<|endoftext|>"],
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
            tok.train_from_iterator(corpus(2000, 123), tr)
            tok.save(path)
    return PreTrainedTokenizerFast(tokenizer_file=path, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def main():
    accelerator = Accelerator()
    logger.info(accelerator.state, main_process_only=False)
    set_seed(0)
    tokenizer = build_tokenizer(accelerator)
    logger.info(f"tokenizer vocab size {len(tokenizer)}; pad_token={tokenizer.pad_token}")
    if args.fault != "nopad":
        tokenizer.pad_token = tokenizer.eos_token

    def collate(texts):
        enc = tokenizer(texts, padding=True, truncation=True, max_length=48, return_tensors="pt")
        labels = enc["input_ids"].clone()
        labels[enc["attention_mask"] == 0] = -100
        enc["labels"] = labels
        return enc

    cfg = GPT2Config(vocab_size=args.model_vocab, n_layer=2, n_embd=64, n_head=4, n_positions=64,
                     bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    dl = DataLoader(corpus(args.steps * args.bs * 2, 7), batch_size=args.bs, shuffle=True, collate_fn=collate)
    model, opt, dl = accelerator.prepare(model, opt, dl)
    model.train()
    bar = tqdm(total=args.steps, disable=not accelerator.is_local_main_process, desc="train")
    for step, batch in enumerate(dl):
        out = model(**batch)
        accelerator.backward(out.loss)
        opt.step()
        opt.zero_grad()
        bar.update(1)
        bar.set_postfix(loss=f"{out.loss.item():.3f}")
        if step + 1 >= args.steps:
            break
    bar.close()
    logger.info(f"final loss {out.loss.item():.4f}")
    accelerator.end_training()


if __name__ == "__main__":
    main()
