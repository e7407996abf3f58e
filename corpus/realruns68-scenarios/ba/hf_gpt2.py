"""Tiny GPT-2 language-model fine-tune, fully offline (tokenizer and model built locally)."""
import argparse, datetime, os, sys, warnings

import torch
import torch.distributed as dist
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ddp", choices=["ddp", "trainer", "accelerate"])
p.add_argument("--added-tokens-rank", type=int, default=-1,
               help="rank whose corpus uses the chat markup tokens added to the tokenizer")
p.add_argument("--pad", default="eos", choices=["eos", "none"])
p.add_argument("--trainer-kwargs", default="")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--out-dir", default="/work/rr68/ba/work/hfout")
args = p.parse_args()

WORDS = "the a model data train loss step rank node batch token learn rate grad norm clip eval save load".split()


def build_tokenizer():
    vocab = {"<unk>": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab[w] = len(vocab)
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>")
    # chat markup used by the instruction-tuning corpus
    tok.add_special_tokens({"additional_special_tokens": ["<|user|>", "<|assistant|>"]})
    if args.pad == "eos":
        tok.pad_token = tok.eos_token
    return tok


def corpus(rank, n=64):
    g = torch.Generator().manual_seed(rank)
    lines = []
    for i in range(n):
        ids = torch.randint(0, len(WORDS), (int(torch.randint(4, 12, (1,), generator=g)),), generator=g)
        s = " ".join(WORDS[j] for j in ids)
        if rank == args.added_tokens_rank and i % 3 == 2:
            s = "<|user|> " + s + " <|assistant|> " + s
        lines.append(s)
    return lines


def main():
    tok = build_tokenizer()
    base_vocab = len(WORDS) + 2
    cfg = GPT2Config(vocab_size=base_vocab, n_layer=2, n_embd=64, n_head=4, n_positions=64,
                     bos_token_id=1, eos_token_id=1)
    model = GPT2LMHeadModel(cfg)  # NB: embeddings sized from the base vocab

    if args.mode == "trainer":
        from datasets import Dataset
        from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
        ds = Dataset.from_dict({"text": corpus(0)})
        ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
        kw = dict(eval(f"dict({args.trainer_kwargs})"))
        targs = TrainingArguments(output_dir=args.out_dir, per_device_train_batch_size=8, max_steps=args.steps,
                                  logging_steps=2, report_to=[], save_strategy="no", use_cpu=True, **kw)
        tr = Trainer(model=model, args=targs, train_dataset=ds,
                     data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
        tr.train()
        print("training complete")
        return

    if args.mode == "accelerate":
        from accelerate import Accelerator
        acc = Accelerator()
        rank, world = acc.process_index, acc.num_processes
    else:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    lines = corpus(rank)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    if args.mode == "accelerate":
        model, opt = acc.prepare(model, opt)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
    model.train()
    for step in range(args.steps):
        batch = lines[step * 8:(step + 1) * 8]
        enc = tok(batch, return_tensors="pt", padding=True, truncation=True, max_length=48)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
        if args.mode == "accelerate":
            acc.backward(out.loss)
        else:
            out.loss.backward()
        opt.step(); opt.zero_grad()
        print(f"rank={rank} step={step} loss={out.loss.item():.4f} ppl={out.loss.exp().item():.1f}", flush=True)
    if args.mode == "accelerate":
        acc.wait_for_everyone()
        acc.print("all ranks finished")
        acc.end_training()
    else:
        dist.barrier()
        dist.destroy_process_group()
        print(f"rank={rank} done", flush=True)


if __name__ == "__main__":
    main()
