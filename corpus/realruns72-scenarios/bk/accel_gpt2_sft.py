"""Tiny GPT-2 SFT loop with accelerate, argparse CLI, local word-level tokenizer (no downloads)."""
import argparse, json, logging, os
import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)

WORDS = "the a model learns to predict next token from context data batch loss step rank gradient".split()


def build_tokenizer(pad_token):
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>")
    if pad_token:
        kw["pad_token"] = pad_token
    return PreTrainedTokenizerFast(**kw)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--pad_token", default=None, help="pad token to use (GPT-2 has none)")
    p.add_argument("--save_format", choices=["hf", "safetensors"], default="hf")
    p.add_argument("--output_dir", default="/work/rr72/bk/runs/sft")
    args = p.parse_args()
    acc = Accelerator(log_with=None)
    logger.info(acc.state, main_process_only=False)
    tok = build_tokenizer(args.pad_token)
    g = torch.Generator().manual_seed(acc.process_index)
    texts = [" ".join(WORDS[i] for i in torch.randint(len(WORDS), (int(torch.randint(5, 15, (1,), generator=g)),), generator=g).tolist()) for _ in range(64)]
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=64))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt = acc.prepare(model, opt)
    for step in range(args.steps):
        batch_texts = texts[(step * args.batch_size) % 64:(step * args.batch_size) % 64 + args.batch_size]
        enc = tok(batch_texts, padding=True, return_tensors="pt")
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        out = model(**enc, labels=labels)
        acc.backward(out.loss); opt.step(); opt.zero_grad()
        if step % 5 == 0:
            logger.info("step %d loss %.4f", step, acc.gather(out.loss.detach()).mean().item())
    acc.wait_for_everyone()
    if acc.is_main_process:
        os.makedirs(args.output_dir, exist_ok=True)
        if args.save_format == "safetensors":
            from safetensors.torch import save_file
            save_file(acc.unwrap_model(model).state_dict(), os.path.join(args.output_dir, "model.safetensors"))
        else:
            acc.unwrap_model(model).save_pretrained(args.output_dir)
        tok.save_pretrained(args.output_dir)
    logger.info("done")


if __name__ == "__main__":
    main()
