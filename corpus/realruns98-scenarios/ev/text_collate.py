"""Tiny causal-LM fine-tune on locally built text: packing/collate/tokenizer padding issues.

--mode ok|ragged|nopad|bn_last
"""
import argparse, datetime, logging, math, os, random, sys
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

log = logging.getLogger("textlm")
WORDS = ("the a model data loader worker shard batch token sample train eval loss step rank epoch "
         "gradient optimizer tensor memory queue file read write cache index").split()


def corpus(n_docs=60, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 90))) for _ in range(n_docs)]


def build_tokenizer(with_pad):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "<|endoftext|>": 1}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    if with_pad:
        kw["pad_token"] = "<|endoftext|>"
    return PreTrainedTokenizerFast(**kw)


class Chunks(Dataset):
    """Concatenate documents and cut into fixed blocks (keeps the tail block)."""
    def __init__(self, tok, block, keep_tail=True):
        ids = []
        for d in corpus():
            ids += tok(d)["input_ids"] + [tok.eos_token_id]
        self.blocks = [torch.tensor(ids[i:i + block]) for i in range(0, len(ids), block)]
        if not keep_tail and len(self.blocks[-1]) < block:
            self.blocks.pop()

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, i):
        return self.blocks[i]


class Docs(Dataset):
    def __init__(self, n_docs=60):
        self.docs = corpus(n_docs)

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        return self.docs[i]


class LM(nn.Module):
    def __init__(self, vocab, bn=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, 48)
        self.proj = nn.Linear(48, 48)
        self.bn = nn.BatchNorm1d(48) if bn else None
        self.head = nn.Linear(48, vocab)

    def forward(self, x):
        h = self.emb(x)
        if self.bn is not None:
            h = self.bn(h.mean(1)).unsqueeze(1) + h
        return self.head(torch.relu(self.proj(h)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--bs", type=int, default=8)
    ap.add_argument("--block", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--accelerate", action="store_true")
    ap.add_argument("--n-docs", type=int, default=60)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(levelname)s - %(name)s - %(message)s")
    acc = None
    if args.accelerate:
        from accelerate import Accelerator
        acc = Accelerator()
        rank, world = acc.process_index, acc.num_processes
    else:
        rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
        if world > 1:
            dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    tok = build_tokenizer(with_pad=(args.mode != "nopad"))
    if args.mode in ("nopad", "bn_last"):
        ds = Docs(args.n_docs)
        def collate(texts):
            enc = tok(texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
            return enc["input_ids"]
    else:
        ds = Chunks(tok, args.block, keep_tail=(args.mode == "ragged"))
        collate = None
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=17) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.workers, collate_fn=collate)
    model = LM(len(tok), bn=(args.mode == "bn_last"))
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    if acc is not None:
        model, opt, dl = acc.prepare(model, opt, dl)
    elif world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    log.info(f"[rank {rank}] vocab={len(tok)} samples={len(ds)} batches/epoch={len(dl)} pad_token={tok.pad_token!r}")
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        for ids in dl:
            logits = model(ids[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            (acc.backward(loss) if acc is not None else loss.backward())
            opt.step()
            step += 1
            if step % 3 == 0:
                log.info(f"[rank {rank}] epoch={ep} step={step} loss={loss.item():.4f} ppl={math.exp(loss.item()):.2f} seq_len={ids.shape[1]}")
    log.info(f"[rank {rank}] finished {step} steps")
    if acc is not None:
        acc.end_training()
    elif world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
