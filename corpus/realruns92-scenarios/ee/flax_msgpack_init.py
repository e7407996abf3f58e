"""Fine-tune a tiny Flax model starting from pretrained weights stored as a Flax msgpack file
(flax.serialization.to_bytes), e.g. a file checked into the repo under weights/.

--export PATH   train briefly and write the msgpack weights (the "pretraining" job)
--init PATH     load weights from PATH and fine-tune
"""
import argparse
import sys

p = argparse.ArgumentParser()
p.add_argument("--export", default=None)
p.add_argument("--init", default=None)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()

import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
from flax import serialization


class Tagger(nn.Module):
    @nn.compact
    def __call__(self, tok):
        h = nn.Embed(100, 32, name="embed")(tok)
        h = nn.relu(nn.Dense(64, name="mlp")(h))
        return nn.Dense(6, name="out")(h)


model = Tagger()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 12), jnp.int32))["params"]
print(f"jax {jax.__version__}; model params {sum(x.size for x in jax.tree_util.tree_leaves(params))}", flush=True)
if args.init:
    with open(args.init, "rb") as f:
        blob = f.read()
    print(f"loading pretrained weights from {args.init} ({len(blob)} bytes)", flush=True)
    params = serialization.from_bytes(params, blob)
    print("pretrained weights loaded", flush=True)

tx = optax.adam(1e-3)
opt = tx.init(params)
rng = np.random.default_rng(0)


@jax.jit
def step(params, opt, tok, tag):
    def lf(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply({"params": p}, tok), tag).mean()
    l, g = jax.value_and_grad(lf)(params)
    u, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, u), opt, l


for s in range(args.steps):
    tok = rng.integers(0, 100, size=(16, 12))
    tag = tok % 6
    params, opt, l = step(params, opt, tok, tag)
    if s % 10 == 0:
        print(f"step {s} loss {float(l):.4f}", flush=True)
if args.export:
    with open(args.export, "wb") as f:
        f.write(serialization.to_bytes(params))
    print(f"wrote {args.export}", flush=True)
