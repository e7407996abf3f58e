"""Write per-rank token shards (node-local copies) for the tiny LM runs."""
import argparse, os
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--out", default="data/shards")
p.add_argument("--world", type=int, default=2)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--seqs", type=int, default=256)
p.add_argument("--seqlen", type=int, default=33)
p.add_argument("--skip-rank", type=int, default=-1, help="do not write this rank's shard (sync not finished)")
p.add_argument("--newer-tokenizer-rank", type=int, default=-1, help="this rank's shard tokenized with tokenizer v2 (vocab+64)")
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
for r in range(a.world):
    if r == a.skip_rank:
        continue
    rng = np.random.default_rng(r)
    v = a.vocab + 64 if r == a.newer_tokenizer_rank else a.vocab
    arr = rng.integers(0, v, size=(a.seqs, a.seqlen)).astype(np.int32)
    np.save(os.path.join(a.out, f"train-{r:05d}-of-{a.world:05d}.npy"), arr)
print("wrote shards to", a.out)
