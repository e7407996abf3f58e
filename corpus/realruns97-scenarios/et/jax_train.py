"""Single-process JAX / Flax / Optax training loop (tiny MLP regression/classification).

--fault selects a real bug:
  none            healthy run (uses donate_argnums with a non-donatable buffer -> warning)
  shape           eval batch built with a different feature width than the model (dot_general shape error under jit)
  concretize      python `if` on a traced value inside the jitted step (gradient clipping written with python control flow)
  tracer-leak     a jitted step stashes an intermediate into a module-level list for "logging"; later used outside
  donate-reuse    params donated to the jitted step, old reference reused for an EMA copy afterwards
  debug-nans      jax_debug_nans with a log-loss on un-clipped probabilities
  pmap-devices    pmap over a batch sharded for 8 devices on a 4-device host
  shard-divis     shard_map over a 4-device mesh with a global batch not divisible by 4
  oom             eval buffer sized from a wrong config (seq_len typo) -> XLA allocation refused
"""
import argparse
import functools
import logging
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--devices", type=int, default=4)
p.add_argument("--log", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
args = p.parse_args()

os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={args.devices}")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.log:
        log.info(msg)
    else:
        print(msg, flush=True)


if args.fault == "debug-nans":
    jax.config.update("jax_debug_nans", True)


class MLP(nn.Module):
    hidden: int = 64
    out: int = 4

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.gelu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.gelu(x)
        return nn.Dense(self.out)(x)


FEAT = 16
rng = np.random.default_rng(0)
W_true = rng.normal(size=(FEAT, 4)).astype(np.float32)


def make_batch(bs, feat=FEAT):
    x = rng.normal(size=(bs, feat))
    if args.fault != "x64":
        x = x.astype(np.float32)
    y = np.argmax(x[:, :FEAT] @ W_true + 0.1 * rng.normal(size=(bs, 4)), axis=-1)
    if args.fault == "x64":
        # data pipeline keeps numpy's float64; asked for explicitly when converting
        return jnp.asarray(x, dtype=jnp.float64), jnp.asarray(y, dtype=jnp.int64)
    return jnp.asarray(x), jnp.asarray(y)


model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, FEAT)))
lr = 1e-2
if args.fault == "debug-nans":
    lr = 3.0  # "aggressive" lr copied from a sweep
tx = optax.adam(lr)
opt_state = tx.init(params)
say(f"jax {jax.__version__} devices={jax.devices()}")
say(f"params: {sum(x.size for x in jax.tree_util.tree_leaves(params))}")

_debug = []


def loss_fn(params, x, y):
    logits = model.apply(params, x)
    if args.fault == "debug-nans":
        # hand-written cross entropy: softmax then log, no clipping
        probs = jnp.exp(logits) / jnp.sum(jnp.exp(logits), axis=-1, keepdims=True)
        onehot = jax.nn.one_hot(y, 4)
        return -jnp.mean(jnp.sum(onehot * jnp.log(probs), axis=-1))
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def _step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    gnorm = optax.global_norm(grads)
    if args.fault == "concretize":
        # clip like in the old PyTorch code
        if gnorm > 1.0:
            grads = jax.tree_util.tree_map(lambda g: g / gnorm, grads)
    if args.fault == "tracer-leak":
        _debug.append(gnorm)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss, gnorm


if args.fault in ("donate-reuse", "none", "x64"):
    train_step = jax.jit(_step, donate_argnums=(0, 1, 2))
else:
    train_step = jax.jit(_step)


@jax.jit
def eval_step(params, x, y):
    logits = model.apply(params, x)
    return (jnp.argmax(logits, -1) == y).mean()


ema = params
t0 = time.time()
it = range(1, args.steps + 1)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc="train", mininterval=0, miniters=5)
for step in it:
    x, y = make_batch(32)
    if args.fault == "pmap-devices" and step == args.step:
        ndev = 8  # from the TPU v3-8 config
        say(f"step {step}: switching to data-parallel pmap over {ndev} shards")
        pstep = jax.pmap(_step, axis_name="batch")
        rp = jax.device_put_replicated(params, jax.local_devices()) if False else None
        xs = x.reshape(ndev, -1, FEAT)
        ys = y.reshape(ndev, -1)
        rparams = jax.tree_util.tree_map(lambda a: jnp.stack([a] * ndev), params)
        ropt = jax.tree_util.tree_map(lambda a: jnp.stack([a] * ndev), opt_state)
        pstep(rparams, ropt, xs, ys)
    if args.fault == "shard-divis" and step == args.step:
        from jax.sharding import Mesh, PartitionSpec as P
        try:
            from jax import shard_map
        except ImportError:
            from jax.experimental.shard_map import shard_map
        mesh = Mesh(np.array(jax.devices()), ("data",))
        gbs = 30  # per_device_bs(8) * grad_accum... mis-set to 30 in config
        xg, yg = make_batch(gbs)
        say(f"step {step}: sharded eval over mesh {mesh.shape} global_batch={gbs}")

        def local_acc(p_, xb, yb):
            return jax.lax.pmean(eval_step(p_, xb, yb), "data")

        sm = shard_map(local_acc, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=P())
        say(f"sharded acc {float(jax.jit(sm)(params, xg, yg)):.3f}")
    if args.fault == "oom" and step == args.step:
        seq_len = 2048 * 1024 * 64  # eval_seq_len read as bytes instead of tokens
        say(f"step {step}: allocating eval buffer seq_len={seq_len}")
        buf = jnp.zeros((seq_len, 1024), jnp.float32)
        say(f"eval buffer {buf.shape}")
    params, opt_state, loss, gnorm = train_step(params, opt_state, x, y)
    if args.fault == "donate-reuse":
        # EMA of weights for evaluation
        ema = jax.tree_util.tree_map(lambda e, p_: 0.99 * e + 0.01 * p_, ema, params)
    if args.fault == "tracer-leak" and step == args.step:
        say(f"step {step}: logging debug grad norms from {len(_debug)} traces")
        say(f"max grad norm so far: {float(jnp.max(jnp.stack(_debug)))}")
    if step % 10 == 0 or step == 1:
        if args.fault == "shape" and step >= args.step:
            xe, ye = make_batch(64, feat=20)  # eval set built with 4 extra engineered features
        else:
            xe, ye = make_batch(64)
        acc = eval_step(params, xe, ye)
        say(f"step {step:4d} loss {float(loss):.4f} gnorm {float(gnorm):.3f} eval_acc {float(acc):.3f} ({time.time()-t0:.1f}s)")
say("training finished")
