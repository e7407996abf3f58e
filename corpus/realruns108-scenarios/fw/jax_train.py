"""Tiny Flax/Optax MLP trainer on synthetic data (single process, CPU).

--fault selects a bug that is present in the code path:
  none         healthy run
  shape        eval batch built with the wrong feature width (feature engineering mismatch)
  scan-dtype   accumulate loss in a lax.scan with an int carry (gradient accumulation loop)
  concretize   python `if` on a traced value inside the jitted step (grad clipping branch)
  leak         step function stores a traced value on a python object (running stats cache)
  nan          log of a softmax prob that underflows, with jax_debug_nans on
  rng          dropout model applied without an rng during training
  oom          builds a (huge) pairwise-distance matrix for a "hard negative" batch
  keyerror     looks up the wrong parameter name for weight decay masking
  optstate     resume optimizer state saved for a smaller model
  interrupt    long run (killed with SIGINT from outside)
"""
import argparse
import logging
import os
import pickle
import sys
import time
import warnings

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--log", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--ckpt", default="")
p.add_argument("--oom-n", type=int, default=200000)
p.add_argument("--no-debug-nans", action="store_true")
p.add_argument("--noisy", action="store_true", help="float64 inputs, legacy API calls")
args = p.parse_args()


import jax
if args.fault == "nan" and not args.no_debug_nans:
    jax.config.update("jax_debug_nans", True)
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

if args.log == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("trainer")


def out(msg):
    if args.log == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


class MLP(nn.Module):
    hidden: int
    classes: int = 10
    dropout: float = 0.0

    @nn.compact
    def __call__(self, x, train: bool = False):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        if self.dropout > 0:
            x = nn.Dropout(self.dropout, deterministic=not train)(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(self.classes)(x)


FEAT = 32
rng = np.random.default_rng(0)
W_true = rng.normal(size=(FEAT, 10)).astype(np.float32)


def batch(bs=64, feat=FEAT):
    x = rng.normal(size=(bs, feat))
    if not args.noisy:
        x = x.astype(np.float32)
    y = (x[:, :FEAT] @ W_true).argmax(-1)
    if args.noisy:
        return jnp.asarray(x, dtype=jnp.float64), jnp.asarray(y, dtype=jnp.int64)
    return jnp.asarray(x), jnp.asarray(y)


model = MLP(hidden=args.hidden, dropout=0.1 if args.fault == "rng" else 0.0)
key = jax.random.PRNGKey(0)
params = model.init(key, jnp.zeros((1, FEAT)))
n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
out(f"model: MLP hidden={args.hidden} params={n_params} devices={jax.devices()}")

if args.fault == "keyerror":
    # mask weight decay for all but the last layer's bias
    def wd_mask(p):
        m = jax.tree_util.tree_map(lambda _: True, p)
        m["params"]["Dense_3"]["bias"] = False
        return m
    tx = optax.adamw(1e-3, weight_decay=1e-4, mask=wd_mask(params))
else:
    tx = optax.adam(1e-3)
opt_state = tx.init(params)

if args.fault == "optstate":
    with open(args.ckpt, "rb") as f:
        ck = pickle.load(f)
    out(f"resuming from {args.ckpt} (step {ck['step']})")
    params = model.init(key, jnp.zeros((1, FEAT)))
    opt_state = ck["opt_state"]


def loss_fn(params, x, y, dkey=None):
    if args.fault == "rng":
        logits = model.apply(params, x, train=True)
    else:
        logits = model.apply(params, x)
    if args.fault == "nan":
        probs = jax.nn.softmax(logits)
        return -jnp.mean(jnp.log(probs[jnp.arange(y.shape[0]), y]))
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


class Stats:
    last_gnorm = None


stats = Stats()


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    gnorm = optax.global_norm(grads)
    if args.fault == "concretize":
        if gnorm > 5.0:
            grads = jax.tree_util.tree_map(lambda g: g * 5.0 / gnorm, grads)
    if args.fault == "leak":
        stats.last_gnorm = gnorm
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss, gnorm


@jax.jit
def eval_step(params, x, y):
    logits = model.apply(params, x)
    return (logits.argmax(-1) == y).mean()


def accum_loss(params, xs, ys):
    def body(carry, xy):
        x, y = xy
        l = loss_fn(params, x, y)
        return carry + l, l
    # accumulate in the compute dtype (bf16 for the mixed-precision config)
    init = jnp.zeros((), jnp.bfloat16 if args.fault == "scan-dtype" else jnp.float32)
    total, _ = jax.lax.scan(body, init, (xs, ys))
    return total / xs.shape[0]


it = range(1, args.steps + 1)
if args.log == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0)

t0 = time.time()
for step in it:
    if args.fault == "nan" and step >= args.step:
        # second data shard: 48-row batches, raw sensor counts (normalisation step skipped)
        x, y = batch(48)
        x = x * 1e4
    else:
        x, y = batch()
    if args.fault == "interrupt":
        time.sleep(0.05)  # long run: input pipeline reads from slow storage
    params, opt_state, loss, gnorm = train_step(params, opt_state, x, y)
    if args.fault == "leak" and step >= 2:
        # reuse cached gradient norm for a lr warmup heuristic
        scale = jnp.minimum(1.0, stats.last_gnorm + 0.0)
    if step % 10 == 0:
        msg = f"step {step:4d} loss {float(loss):.4f} gnorm {float(gnorm):.3f} {time.time()-t0:.1f}s"
        if args.log == "tqdm":
            it.set_postfix(loss=f"{float(loss):.3f}")
        else:
            out(msg)
    if step == args.step and args.fault == "oom":
        out(f"mining hard negatives over {args.oom_n} cached embeddings")
        emb = jax.random.normal(key, (args.oom_n, 64))
        d = jnp.sum((emb[:, None, :] - emb[None, :, :]) ** 2, -1)
        out(f"hardest negative distance {float(d.max()):.3f}")
    if step == args.step and args.fault == "scan-dtype":
        xs = jnp.stack([batch()[0] for _ in range(4)])
        ys = jnp.stack([batch()[1] for _ in range(4)])
        al = jax.jit(accum_loss)(params, xs, ys)
        out(f"step {step} accumulated loss {float(al):.4f}")
    if step % 20 == 0:
        feat = FEAT
        if args.fault == "shape" and step >= args.step:
            feat = FEAT + 8  # eval set built with extra engineered features
        xe, ye = batch(256, feat)
        acc = eval_step(params, xe, ye)
        out(f"eval step {step}: acc {float(acc):.3f}")
    if args.fault == "optstate" or args.ckpt and step == args.steps:
        pass

if args.ckpt and args.fault == "none":
    with open(args.ckpt, "wb") as f:
        pickle.dump({"step": args.steps, "opt_state": jax.device_get(opt_state)}, f)
    out(f"saved optimizer state to {args.ckpt}")
out("training finished")
