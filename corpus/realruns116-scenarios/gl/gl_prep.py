"""Build per-rank tokenised shards for gl_train.py: DIR/rank{r}/chunk{c:03d}.npz (tokens, labels, weight, aux).

Defects are the kind that really end up in shards: a shard tokenised with a larger vocabulary,
a shard with a new class id, a shard with an odd number of rows, missing weights (NaN), a shard
written without the aux column, a shard whose label set is missing a class.
"""
import argparse, os
import numpy as np

p = argparse.ArgumentParser()
p.add_argument('--out', required=True)
p.add_argument('--ranks', type=int, default=4)
p.add_argument('--chunks', type=int, default=16)
p.add_argument('--rows', type=int, default=64)
p.add_argument('--seq', type=int, default=32)
p.add_argument('--vocab', type=int, default=256)
p.add_argument('--classes', type=int, default=10)
p.add_argument('--oob', default='', help='rank:chunk tokenised with a 320-token vocabulary')
p.add_argument('--badlabel', default='', help='rank:chunk containing class id == classes')
p.add_argument('--ragged', default='', help='rank:chunk with rows+6 rows')
p.add_argument('--nanw', default='', help='rank:chunk with missing (NaN) weights')
p.add_argument('--noaux', default='', help='rank:chunk written without the aux column')
p.add_argument('--fewclasses', default='', help='rank whose labels never reach the top class')
p.add_argument('--seed', type=int, default=0)
a = p.parse_args()


def rc(s):
    return tuple(int(v) for v in s.split(':')) if s else None


rng = np.random.default_rng(a.seed)
for r in range(a.ranks):
    os.makedirs(f'{a.out}/rank{r}', exist_ok=True)
    for c in range(a.chunks):
        n = a.rows + (6 if rc(a.ragged) == (r, c) else 0)
        vocab = 320 if rc(a.oob) == (r, c) else a.vocab
        tokens = rng.integers(0, vocab, size=(n, a.seq)).astype(np.int64)
        if rc(a.oob) == (r, c):
            tokens[n // 2:, -4:] = rng.integers(a.vocab, vocab, size=(n - n // 2, 4))
        top = a.classes - 1 if (a.fewclasses and int(a.fewclasses) == r) else a.classes
        labels = (tokens[:, :4].sum(1) % top).astype(np.int64)
        if rc(a.badlabel) == (r, c):
            labels[n - 3] = a.classes
        weight = rng.uniform(0.5, 1.5, size=n).astype(np.float32)
        if rc(a.nanw) == (r, c):
            weight[7] = np.nan
        arrays = dict(tokens=tokens, labels=labels, weight=weight)
        if rc(a.noaux) != (r, c):
            arrays['aux'] = (tokens[:, 0] % 4).astype(np.int64)
        np.savez(f'{a.out}/rank{r}/chunk{c:03d}.npz', **arrays)
print(f'wrote {a.ranks} x {a.chunks} shards to {a.out}')
