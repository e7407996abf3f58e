"""Tiny GPT-2 language-model pretraining under DDP (gloo/CPU), with a locally built word-level tokenizer.

  python hf_lm.py prep --out DIR [--retok-rank R]   # R: that rank's shard was re-tokenized with the v2 tokenizer
  torchrun ... hf_lm.py train --out DIR [--steps N]
"""
import argparse
import logging
import os
import random
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast  # noqa: E402

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
         "you were her she there been one all we their has would when if so no what can out more up said will").split()


def make_corpus(seed, n_docs=60):
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(40, 400))) for _ in range(n_docs)]


def build_tokenizer(extra_words=()):
    vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2}
    for w in list(WORDS) + list(extra_words):
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>",
                                   model_max_length=128)


def prep(args):
    os.makedirs(args.out, exist_ok=True)
    tok_v1 = build_tokenizer()
    tok_v1.save_pretrained(os.path.join(args.out, "tokenizer"))
    # v2 tokenizer: the data team added domain words at the end of the vocab
    tok_v2 = build_tokenizer(extra_words=[f"dom{i}" for i in range(200)])
    for r in range(args.world):
        docs = make_corpus(r)
        tok = tok_v1
        if r == args.retok_rank:
            rnd = random.Random(99)
            docs = [d + " " + " ".join(f"dom{rnd.randint(0, 199)}" for _ in range(5)) for d in docs]
            tok = tok_v2
        ids = []
        for d in docs:
            ids.extend(tok(d)["input_ids"] + [tok.eos_token_id])
        torch.save(torch.tensor(ids), os.path.join(args.out, f"tokens_rank{r}.pt"))
    print(f"wrote tokenizer (vocab={len(tok_v1)}) and {args.world} token shards to {args.out}")


def train(args):
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    logging.basicConfig(level=logging.INFO, stream=sys.stdout if args.log_stdout else sys.stderr,
                        format=f"%(asctime)s - %(levelname)s - %(name)s - [rank{rank}] %(message)s")
    log = logging.getLogger("lm")
    tok = PreTrainedTokenizerFast.from_pretrained(os.path.join(args.out, "tokenizer"))
    if args.tokenize_raw:
        # re-tokenize one raw document to report stats (long docs trigger the tokenizer length warning)
        n = len(tok(make_corpus(rank)[0] * 4)["input_ids"])
        log.info("sample document length: %d tokens", n)
    cfg = GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=64, n_layer=2, n_head=2,
                     bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg)
    log.info("model: %.2fM params, vocab=%d", sum(p.numel() for p in model.parameters()) / 1e6, cfg.vocab_size)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    ids = torch.load(os.path.join(args.out, f"tokens_rank{rank}.pt"))
    seq = args.seq
    nblk = len(ids) // seq
    blocks = ids[: nblk * seq].view(nblk, seq)
    log.info("loaded %d tokens -> %d blocks of %d", len(ids), nblk, seq)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in range(args.steps):
        idx = torch.randint(0, nblk, (args.bs,), generator=g)
        x = blocks[idx]
        out = ddp(input_ids=x, labels=x)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        if step % 5 == 0 or step == args.steps - 1:
            l = out.loss.detach().clone()
            dist.all_reduce(l)
            log.info("step %d/%d loss %.4f ppl %.1f (%.0f ms/step)", step, args.steps, l.item() / world,
                     torch.exp(l / world).item(), (time.time() - t0) / (step + 1) * 1000)
    dist.barrier()
    log.info("done in %.1fs", time.time() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["prep", "train"])
    p.add_argument("--out", required=True)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--retok-rank", type=int, default=-1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--tokenize-raw", action="store_true")
    p.add_argument("--log-stdout", action="store_true")
    a = p.parse_args()
    prep(a) if a.mode == "prep" else train(a)
