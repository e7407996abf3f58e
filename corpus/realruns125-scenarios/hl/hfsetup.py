"""Family: Hugging Face setup (tokenizer/model files, TrainingArguments from CLI, Accelerator settings).
Tiny GPT-2 built from a config; a tiny local word-level tokenizer is written by --make-tokenizer DIR.
  --tokenizer NAME_OR_DIR   where AutoTokenizer loads from
  --mode trainer|accelerate
"""
import os, sys, json, time
from dataclasses import dataclass, field
import torch
from transformers import (AutoTokenizer, GPT2Config, GPT2LMHeadModel, HfArgumentParser, TrainingArguments,
                          Trainer, PreTrainedTokenizerFast, DataCollatorForLanguageModeling)


@dataclass
class ScriptArgs:
    tokenizer: str = field(default="tok")
    mode: str = field(default="trainer")
    make_tokenizer: str = field(default="")
    mixed_precision: str = field(default="no")
    n_texts: int = field(default=64)


def build_tokenizer(out):
    from tokenizers import Tokenizer, models, pre_tokenizers
    words = "the a model trains on tiny text data every step loss goes down slowly rank gloo cpu".split()
    vocab = {"[PAD]": 0, "[UNK]": 1, "[EOS]": 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]")
    fast.save_pretrained(out)


def texts(n):
    import random
    r = random.Random(0)
    words = "the a model trains on tiny text data every step loss goes down slowly".split()
    return [" ".join(r.choice(words) for _ in range(r.randint(6, 14))) for _ in range(n)]


class ListDS(torch.utils.data.Dataset):
    def __init__(self, enc):
        self.enc = enc
    def __len__(self):
        return len(self.enc)
    def __getitem__(self, i):
        return {"input_ids": self.enc[i]}


def main():
    parser = HfArgumentParser((ScriptArgs, TrainingArguments))
    sargs, targs = parser.parse_args_into_dataclasses()
    if sargs.make_tokenizer:
        build_tokenizer(sargs.make_tokenizer); print("tokenizer written to", sargs.make_tokenizer); return
    tok = AutoTokenizer.from_pretrained(sargs.tokenizer)
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64,
                     pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    enc = [tok(t)["input_ids"] for t in texts(sargs.n_texts)]
    ds = ListDS(enc)
    coll = DataCollatorForLanguageModeling(tok, mlm=False)
    if sargs.mode == "trainer":
        tr = Trainer(model=model, args=targs, train_dataset=ds, eval_dataset=ListDS(enc[:16]), data_collator=coll)
        tr.train()
        if targs.do_eval:
            print(tr.evaluate())
    else:
        from accelerate import Accelerator
        acc = Accelerator(mixed_precision=sargs.mixed_precision)
        acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} device={acc.device}")
        dl = torch.utils.data.DataLoader(ds, batch_size=8, collate_fn=coll, shuffle=True)
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
        model, opt, dl = acc.prepare(model, opt, dl)
        for ep in range(2):
            for i, b in enumerate(dl):
                out = model(**b)
                acc.backward(out.loss); opt.step(); opt.zero_grad()
                if i % 2 == 0:
                    print(f"[proc {acc.process_index}] epoch {ep} it {i} loss {out.loss.item():.4f}", flush=True)
        acc.wait_for_everyone()
        acc.print("finished")


if __name__ == "__main__":
    main()
