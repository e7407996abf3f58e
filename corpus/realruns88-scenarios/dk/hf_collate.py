"""Tiny GPT-2 fine-tune with accelerate; local word-level tokenizer; DataCollatorWithPadding in workers."""
import argparse, os, random
import torch
from accelerate import Accelerator
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import DataCollatorWithPadding, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--set-pad", action="store_true")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--workers", type=int, default=2)
args = p.parse_args()

words = "the a model data loader worker rank batch token sample shard epoch loss grad step train eval".split()
vocab = {"<unk>": 0, "<|endoftext|>": 1}
for w in words:
    vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
if args.set_pad:
    tok.pad_token = tok.eos_token

rng = random.Random(0)
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 20))) for _ in range(256)]


class TextDS(torch.utils.data.Dataset):
    def __len__(self):
        return len(texts)

    def __getitem__(self, i):
        enc = tok(texts[i], truncation=True, max_length=32)
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}


def main():
    acc = Accelerator()
    collator = DataCollatorWithPadding(tok, return_tensors="pt")
    dl = torch.utils.data.DataLoader(TextDS(), batch_size=8, shuffle=True, collate_fn=collator, num_workers=args.workers)
    cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_embd=64, n_head=2, n_positions=64,
                     bos_token_id=1, eos_token_id=1, pad_token_id=tok.pad_token_id)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    while step < args.steps:
        for batch in dl:
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            out = model(**batch, labels=labels)
            acc.backward(out.loss)
            opt.step(); opt.zero_grad()
            step += 1
            if step % 5 == 0:
                acc.print(f"step {step} loss {out.loss.item():.4f}")
            if step >= args.steps:
                break
    acc.wait_for_everyone()
    acc.print("finished")


if __name__ == "__main__":
    main()
