"""Healthy tiny GPT-2 LM training (accelerate or plain), with a locally built fast tokenizer and DataLoader workers."""
import os, sys, time, argparse
import torch
from torch.utils.data import Dataset, DataLoader
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

WORDS = ("the model reads a batch of tokens and predicts the next one while the optimizer "
         "updates weights after each step of gradient descent on a small corpus").split()

def build_tokenizer():
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]")); tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS)] * 10, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")

class TextDS(Dataset):
    def __init__(self, enc): self.enc = enc
    def __len__(self): return len(self.enc)
    def __getitem__(self, i): return torch.tensor(self.enc[i])

def main():
    p = argparse.ArgumentParser(); p.add_argument("--steps", type=int, default=30); p.add_argument("--workers", type=int, default=2)
    p.add_argument("--use-accelerate", action="store_true"); p.add_argument("--threads", type=int, default=0)
    args = p.parse_args()
    if args.threads: torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    texts = [" ".join(WORDS[j] for j in torch.randint(0, len(WORDS), (32,), generator=g).tolist()) for _ in range(512)]
    tok = build_tokenizer()
    enc = tok(texts, truncation=True, max_length=32, padding="max_length")["input_ids"]   # batch-encode uses the Rust thread pool
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    dl = DataLoader(TextDS(enc), batch_size=16, shuffle=True, num_workers=args.workers)
    if args.use_accelerate:
        from accelerate import Accelerator
        acc = Accelerator(cpu=True); model, opt, dl = acc.prepare(model, opt, dl)
        rank, say, backward = acc.process_index, acc.print, acc.backward
    else:
        rank, say, backward = 0, print, lambda l: l.backward()
    say(f"torch threads={torch.get_num_threads()} cpus={os.cpu_count()} OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    t0 = time.time(); step = 0
    while step < args.steps:
        for ids in dl:
            out = model(input_ids=ids, labels=ids)
            backward(out.loss); opt.step(); opt.zero_grad()
            if step % 5 == 0: say(f"step {step} loss {out.loss.item():.4f} {(time.time()-t0)/(step+1):.2f}s/it")
            step += 1
            if step >= args.steps: break
    say(f"finished {step} steps in {time.time()-t0:.1f}s")

if __name__ == "__main__":
    main()
