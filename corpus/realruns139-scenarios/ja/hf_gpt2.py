"""Tiny GPT-2 LM fine-tune with accelerate; a locally built word-level tokenizer (offline)."""
import argparse, os, sys, math, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import Dataset, DataLoader
from accelerate import Accelerator
from accelerate.utils import set_seed
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, get_linear_schedule_with_warmup
from tqdm.auto import tqdm

WORDS = ("the model reads a batch of text and predicts the next token while the loss goes down slowly "
         "rank node gpu cpu data loader step epoch gradient weight bias layer norm attention head value key query").split()

def build_tokenizer():
    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]",
                                   model_max_length=16)

class Lines(Dataset):
    def __init__(self, n, seed, inject_at=None):
        g = torch.Generator().manual_seed(seed)
        self.rows = []
        for i in range(n):
            k = int(torch.randint(6, 20, (1,), generator=g))
            idx = torch.randint(0, len(WORDS), (k,), generator=g)
            s = " ".join(WORDS[j] for j in idx)
            if inject_at is not None and i == inject_at:
                s = "<|tool_call|> " + s     # agent-trace record with the new special token
            self.rows.append(s)
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        return self.rows[i]

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--bad-rank", type=int, default=1)
    p.add_argument("--bad-step", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    acc = Accelerator(gradient_accumulation_steps=1)
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    set_seed(0)
    tok = build_tokenizer()
    base_vocab = len(tok)
    if a.fault == "added_tokens":
        n = tok.add_special_tokens({"additional_special_tokens": ["<|tool_call|>"]})
        acc.print(f"added {n} special tokens, len(tokenizer)={len(tok)}")
    cfg = GPT2Config(vocab_size=base_vocab, n_positions=32, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=2, eos_token_id=2, pad_token_id=1)
    model = GPT2LMHeadModel(cfg)
    bs = 4
    inject = a.bad_step * bs if (a.fault == "added_tokens" and acc.process_index == a.bad_rank) else None
    # every process reads its own pre-split shard
    ds = Lines(a.steps * bs, seed=100 + acc.process_index, inject_at=inject)
    def collate(rows):
        enc = tok(rows, padding=True, truncation=a.fault != "none", return_tensors="pt")
        enc["labels"] = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        return enc
    dl = DataLoader(ds, batch_size=bs, collate_fn=collate)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    sched = get_linear_schedule_with_warmup(opt, 2, a.steps)
    if a.fault == "none":
        model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
    else:
        model, opt, sched = acc.prepare(model, opt, sched)   # shards are already split per process
    model.train()
    bar = tqdm(dl, disable=not acc.is_local_main_process, desc="train", ncols=100)
    for step, batch in enumerate(bar):
        with acc.accumulate(model):
            out = model(**batch)
            acc.backward(out.loss)
            gn = acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step(); sched.step(); opt.zero_grad()
        loss = acc.gather(out.loss.detach()).mean().item()
        bar.set_postfix(loss=f"{loss:.3f}", ppl=f"{math.exp(loss):.1f}")
        if step % 3 == 0:
            acc.print(f"step={step} loss={loss:.4f} grad_norm={float(gn):.3f} lr={sched.get_last_lr()[0]:.2e}")
    acc.wait_for_everyone()
    acc.print("training complete")
    acc.end_training()

if __name__ == "__main__":
    main()
