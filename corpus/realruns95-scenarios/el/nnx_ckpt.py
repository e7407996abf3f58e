"""Flax NNX char-level transformer-ish LM trained with optax, checkpointed with Orbax.

Two-phase usage:  --phase train   (trains, saves checkpoints every --ckpt-every)
                  --phase resume  (restores latest checkpoint, continues)
Faults (--fault):
  none           healthy
  model_changed  resume with a wider model / an extra layer (config edited between runs)
  optim_changed  resume after adding optax.clip_by_global_norm to the chain
  truncated      (resume) latest checkpoint file truncated by a killed copy
  badmatmul      a refactor of the head uses the wrong weight orientation at step N
  import_metrics the eval loop uses clu.metrics
"""
import argparse
import os
import sys
import time
import logging

p = argparse.ArgumentParser()
p.add_argument("--phase", default="train")
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--ckpt-dir", default="/work/rr95/el/ckpt/run")
p.add_argument("--ckpt-every", type=int, default=10)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--clip", action="store_true")
p.add_argument("--logging", action="store_true")
args = p.parse_args()

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
    say = logging.getLogger("train").info
else:
    def say(m):
        print(m, flush=True)

import numpy as np
import jax
import jax.numpy as jnp
import optax
from flax import nnx
import orbax.checkpoint as ocp

VOCAB = 96
SEQ = 32
TEXT = ("the quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat. " * 200)
data = np.array([min(ord(c) - 32, VOCAB - 1) for c in TEXT], dtype=np.int32)


class Block(nnx.Module):
    def __init__(self, dim, rngs):
        self.ln1 = nnx.LayerNorm(dim, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=4, in_features=dim, qkv_features=dim, decode=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(dim, rngs=rngs)
        self.fc1 = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.fc2 = nnx.Linear(4 * dim, dim, rngs=rngs)

    def __call__(self, x, mask):
        x = x + self.attn(self.ln1(x), mask=mask)
        return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))


class TinyLM(nnx.Module):
    def __init__(self, dim, layers, rngs):
        self.embed = nnx.Embed(VOCAB, dim, rngs=rngs)
        self.pos = nnx.Param(jax.random.normal(rngs.params(), (SEQ, dim)) * 0.02)
        self.blocks = nnx.List([Block(dim, rngs) for _ in range(layers)])
        self.ln_f = nnx.LayerNorm(dim, rngs=rngs)
        self.head = nnx.Linear(dim, VOCAB, rngs=rngs)
        self.use_tied = False

    def __call__(self, tokens):
        x = self.embed(tokens) + self.pos[...][: tokens.shape[1]]
        mask = nnx.make_causal_mask(tokens)
        for b in self.blocks:
            x = b(x, mask)
        x = self.ln_f(x)
        if self.use_tied:
            # weight tying refactor
            return x @ self.embed.embedding[...]
        return self.head(x)


def get_batch(rng, bs=16):
    idx = rng.integers(0, len(data) - SEQ - 1, size=bs)
    x = np.stack([data[i:i + SEQ] for i in idx])
    y = np.stack([data[i + 1:i + SEQ + 1] for i in idx])
    return jnp.asarray(x), jnp.asarray(y)


def make_tx():
    sched = optax.linear_schedule(1e-3, 1e-4, 200)
    if args.clip:
        return optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))
    return optax.adamw(sched, weight_decay=0.01)


model = TinyLM(args.dim, args.layers, nnx.Rngs(0))
optimizer = nnx.Optimizer(model, make_tx(), wrt=nnx.Param)
metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(m):
        logits = m(x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


ckpt_dir = os.path.abspath(args.ckpt_dir)
mngr = ocp.CheckpointManager(ckpt_dir, options=ocp.CheckpointManagerOptions(max_to_keep=2, create=True))

start = 0
if args.phase == "resume":
    latest = mngr.latest_step()
    say(f"resuming from {ckpt_dir} step {latest}")
    abstract = nnx.state((model, optimizer))
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract)
    restored = mngr.restore(latest, args=ocp.args.StandardRestore(abstract))
    nnx.update((model, optimizer), restored)
    start = latest
    say(f"restored step {latest}")

say(f"params: {sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))}")
if args.fault == "import_metrics":
    from clu import metrics as clu_metrics  # noqa

rng = np.random.default_rng(start)
t0 = time.time()
for step in range(start + 1, start + args.steps + 1):
    if args.fault == "badmatmul" and step == args.step:
        say("switching to tied input/output embeddings (config.tie_embeddings=True)")
        model.use_tied = True
    x, y = get_batch(rng)
    loss = train_step(model, optimizer, x, y)
    if step % 5 == 0:
        say(f"step {step} loss {float(loss):.4f} ({(time.time()-t0)/ (step-start):.3f}s/it)")
    if step % args.ckpt_every == 0:
        mngr.save(step, args=ocp.args.StandardSave(nnx.state((model, optimizer))))
        mngr.wait_until_finished()
        say(f"saved checkpoint step {step} -> {ckpt_dir}")
mngr.close()
say("done")
