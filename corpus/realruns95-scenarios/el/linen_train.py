"""Flax linen MLP classifier trained with optax on a synthetic dataset.

--fault selects a bug that shows up at --step:
  none         healthy run
  shape        a feature-engineering change concatenates an extra column at step N
  dtype        lax.fori_loop carry changes dtype (int accumulator gets float increments)
  tracer_bool  python `if` on traced loss inside jitted step (gradient clipping hack)
  leak         metrics stored from inside jit into a global list, used later
  donate       params donated to jit but the old reference is still used for EMA
  debug_nans   log of a softmax that underflows; jax_debug_nans enabled
  checkify     same NaN, checked with checkify.nan_checks
  prng         old-style uint32 key passed where a typed key array is concatenated
  datafile     validation shards loaded from a directory at step N
  bigeval      eval on a giant batch under a memory rlimit
"""
import argparse
import logging
import os
import sys
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--log", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--data-dir", default="/work/rr95/el/data")
p.add_argument("--mem-limit-mb", type=int, default=0)
p.add_argument("--warn-platform", action="store_true")
p.add_argument("--x64-warn", action="store_true")
p.add_argument("--log-compiles", action="store_true")
p.add_argument("--tqdm-mininterval", type=float, default=0.0)
args = p.parse_args()

if args.mem_limit_mb:
    import resource
    lim = args.mem_limit_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

if args.log == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.log == "logging":
        log.info(msg)
    elif args.log == "tqdm":
        from tqdm import tqdm
        tqdm.write(msg)
    else:
        print(msg, flush=True)


import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from flax.training import train_state

if args.warn_platform:
    jax.config.update("jax_platforms", "cuda,cpu")
if args.log_compiles:
    jax.config.update("jax_log_compiles", True)
    jax.config.update("jax_explain_cache_misses", True)
if args.fault == "debug_nans":
    jax.config.update("jax_debug_nans", True)

say(f"jax {jax.__version__} devices={jax.devices()} backend={jax.default_backend()}")

NUM_FEATURES = 32
NUM_CLASSES = 10


class MLP(nn.Module):
    hidden: int = 128
    classes: int = NUM_CLASSES

    @nn.compact
    def __call__(self, x, train: bool = True):
        x = nn.Dense(self.hidden, name="dense_in")(x)
        x = nn.gelu(x)
        x = nn.LayerNorm()(x)
        x = nn.Dense(self.hidden, name="dense_mid")(x)
        x = nn.gelu(x)
        return nn.Dense(self.classes, name="head")(x)


rng = np.random.default_rng(0)
W_true = rng.normal(size=(NUM_FEATURES, NUM_CLASSES)).astype(np.float32)


def make_batch(step, bs):
    x = rng.normal(size=(bs, NUM_FEATURES)).astype(np.float32)
    y = np.argmax(x @ W_true + 0.3 * rng.normal(size=(bs, NUM_CLASSES)), axis=-1).astype(np.int32)
    if args.fault == "skipnan" and step == args.step:
        x[3, 7] = np.inf  # one corrupted record from the upstream feature store
    if args.fault == "shape" and step >= args.step:
        # "add a bias feature" refactor that only kicks in once curriculum stage 2 starts
        x = np.concatenate([x, np.ones((bs, 1), np.float32)], axis=1)
    return x, y


model = MLP()
key = jax.random.key(42) if args.fault == "prng" else jax.random.PRNGKey(42)
key, init_key = jax.random.split(key)
if args.x64_warn:
    dummy = jnp.zeros((1, NUM_FEATURES), dtype=jnp.float64)
else:
    dummy = jnp.zeros((1, NUM_FEATURES))
params = model.init(init_key, dummy)["params"]
n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
say(f"model params: {n_params}")

sched = optax.warmup_cosine_decay_schedule(0.0, args.lr, 10, args.steps)
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=1e-4))
if args.fault == "skipnan":
    # guard against bad batches: skip non-finite updates (up to 5 in a row)
    tx = optax.apply_if_finite(tx, max_consecutive_errors=5)
state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

LEAKED = []


def loss_fn(params, x, y):
    logits = state.apply_fn({"params": params}, x)
    if args.fault in ("debug_nans", "checkify"):
        # hand-rolled "numerically stable" cross entropy with temperature; the
        # temperature schedule hits 0 at step N and the softmax underflows
        probs = jax.nn.softmax(logits / TEMP[0])
        loss = -jnp.mean(jnp.sum(jax.nn.one_hot(y, NUM_CLASSES) * jnp.log(probs), axis=-1))
    else:
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    acc = jnp.mean(jnp.argmax(logits, -1) == y)
    return loss, acc


TEMP = [1.0]


def _train_step(state, x, y, temp):
    def lf(p):
        logits = state.apply_fn({"params": p}, x)
        if args.fault in ("debug_nans", "checkify"):
            probs = jax.nn.softmax(logits * temp)
            l = -jnp.mean(jnp.sum(jax.nn.one_hot(y, NUM_CLASSES) * jnp.log(probs), axis=-1))
        else:
            l = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return l, logits

    (loss, logits), grads = jax.value_and_grad(lf, has_aux=True)(state.params)
    gnorm = optax.global_norm(grads)
    if args.fault == "tracer_bool":
        # phase 2 (temp<0 flag): skip the update on spiky batches
        if temp < 0 and gnorm > 50.0:
            grads = jax.tree_util.tree_map(jnp.zeros_like, grads)
    if args.fault == "dtype":
        # count how many logits are confident: carry starts int32, body adds a float
        conf = jax.nn.softmax(logits).max(-1)

        def body(i, c):
            return c + (conf[i] > 0.9) * 1.0
        n_conf = jax.lax.fori_loop(0, x.shape[0], body, jnp.int32(0)) if temp < 0 else jnp.int32(0)
    else:
        n_conf = jnp.int32(0)
    if args.fault == "leak":
        LEAKED.append(loss)
    state = state.apply_gradients(grads=grads)
    acc = jnp.mean(jnp.argmax(logits, -1) == y)
    return state, {"loss": loss, "acc": acc, "gnorm": gnorm, "n_conf": n_conf}


if args.fault in ("dtype", "tracer_bool"):
    # temp is static here (used to switch the diagnostics path on at step N)
    train_step = jax.jit(_train_step, static_argnums=(3,))
elif args.fault == "donate":
    train_step = jax.jit(_train_step, donate_argnums=(0,))
else:
    train_step = jax.jit(_train_step)

if args.fault == "checkify":
    from jax.experimental import checkify
    checked_step = jax.jit(checkify.checkify(_train_step, errors=checkify.nan_checks))


@jax.jit
def eval_step(params, x, y):
    logits = model.apply({"params": params}, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), jnp.mean(jnp.argmax(logits, -1) == y)


def load_val_shards():
    d = os.path.join(args.data_dir, "val")
    xs = np.load(os.path.join(d, "val_x_000.npy"))
    ys = np.load(os.path.join(d, "val_y_000.npy"))
    return xs, ys


ema = jax.tree_util.tree_map(lambda a: a, state.params) if args.fault == "donate" else None

it = range(1, args.steps + 1)
if args.log == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc="train", ncols=90, mininterval=args.tqdm_mininterval, file=sys.stderr)

t0 = time.time()
for step in it:
    x, y = make_batch(step, args.batch)
    if args.fault in ("debug_nans", "checkify"):
        # inverse temperature annealing: gets very sharp late in training
        temp = 1.0 if step < args.step else 1e4
    elif args.fault in ("dtype", "tracer_bool"):
        temp = -1.0 if step >= args.step else 1.0
    else:
        temp = 1.0
    if args.fault == "prng" and step == args.step:
        # dropout key for the augmentation pipeline: new-style key mixed with a legacy one
        legacy = jax.random.PRNGKey(step)
        key = jax.random.fold_in(key, step)
        keys = jnp.concatenate([key[None], legacy[None]])
        noise = jax.random.normal(keys[1], x.shape)
    prev_params = state.params
    if args.fault == "checkify":
        err, (state, m) = checked_step(state, jnp.asarray(x), jnp.asarray(y), temp)
        err.throw()
    else:
        state, m = train_step(state, jnp.asarray(x), jnp.asarray(y), temp)
    if args.fault == "donate" and step >= args.step:
        ema = jax.tree_util.tree_map(lambda e, p: 0.99 * e + 0.01 * p, ema, prev_params)
    if args.fault == "leak" and step == args.step:
        hist = jnp.stack(LEAKED)
        say(f"loss history mean {float(hist.mean()):.4f}")
    if step % 5 == 0 or step == 1 or not np.isfinite(float(m["loss"])):
        say(f"step {step:4d} | loss {float(m['loss']):.4f} | acc {float(m['acc']):.3f} | "
            f"grad_norm {float(m['gnorm']):.3f} | lr {float(sched(step)):.2e} | {time.time()-t0:.1f}s")
    if step % 20 == 0:
        if args.fault == "datafile" and step >= args.step:
            vx, vy = load_val_shards()
        elif args.fault == "bigeval" and step >= args.step:
            # "full" validation set in one batch
            vx = np.random.default_rng(1).normal(size=(4_000_000, NUM_FEATURES)).astype(np.float32)
            vy = np.zeros((vx.shape[0],), np.int32)
        else:
            vx, vy = make_batch(-1, 512)
        vl, va = eval_step(state.params, jnp.asarray(vx), jnp.asarray(vy))
        say(f"eval step {step}: val_loss {float(vl):.4f} val_acc {float(va):.3f}")

say(f"training finished: {args.steps} steps in {time.time()-t0:.1f}s, final loss {float(m['loss']):.4f}")
