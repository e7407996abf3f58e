"""Single-process Flax/Optax training of a tiny MLP / char-LM on synthetic data (CPU).

--fault selects a real bug or misconfiguration:
  none          healthy run (with --noisy: float64 requests, deprecated API use -> loud warnings)
  shape         at --step, switch to a feature-augmented batch (extra columns) -> dot_general shape error under jit
  nan           jax_debug_nans on, log(0) in a "label smoothing" term once prob underflows
  concretize    Python `if` on a traced value inside the jitted loss (dynamic masking by step)
  tracer_leak   caches an intermediate from inside jit into a Python global and reuses it later
  scan_dtype    lax.scan carry initialised as float32, body returns bfloat16 (mixed precision refactor)
  oom           big eval batch materialised under a `ulimit -v` cap
"""
import argparse
import logging
import os
import sys
import time
import warnings

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--log", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--noisy", action="store_true")
p.add_argument("--eval-batch", type=int, default=4096)
args = p.parse_args()

if args.log == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def out(msg):
    if args.log == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn

if args.fault == "nan":
    jax.config.update("jax_debug_nans", True)

out(f"jax {jax.__version__} devices={jax.devices()} backend={jax.default_backend()}")

D_IN, D_HID, N_CLS = 32, 64, 10
rng = np.random.default_rng(0)
W_true = rng.normal(size=(D_IN, N_CLS)).astype(np.float32)


def make_batch(bs, extra_feats=0):
    x = rng.normal(size=(bs, D_IN)).astype(np.float32)
    y = (x @ W_true).argmax(-1)
    if extra_feats:
        # "new" feature pipeline appends positional features to every example
        x = np.concatenate([x, rng.normal(size=(bs, extra_feats)).astype(np.float32)], -1)
    return x, y


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x, train=True):
        x = nn.Dense(D_HID, name="fc1")(x)
        x = nn.gelu(x)
        x = nn.Dense(D_HID, name="fc2")(x)
        x = nn.gelu(x)
        return nn.Dense(N_CLS, name="head")(x)


model = MLP()
key = jax.random.PRNGKey(0)
if args.noisy:
    # old code path asked for float64 init data; JAX x64 is off -> UserWarning
    init_x = jnp.zeros((1, D_IN), dtype=jnp.float64)
else:
    init_x = jnp.zeros((1, D_IN))
params = model.init(key, init_x)["params"]
n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
out(f"model params: {n_params}")

lr = 3e-3
if args.fault == "nan":
    lr = float(os.environ.get('LR', '1.5'))  # someone copied the lr from a config that used lr-scaling by 1/batch
tx = optax.chain(optax.clip_by_global_norm(1e9), optax.adam(lr))
opt_state = tx.init(params)

_cache = {}


def loss_fn(params, x, y, step):
    logits = model.apply({"params": params}, x)
    if args.fault == "concretize":
        # warmup: only use the easy half of the classes for the first steps
        if step < 10:
            logits = logits[:, : N_CLS // 2]
            y = jnp.minimum(y, N_CLS // 2 - 1)
    if args.fault == "tracer_leak":
        _cache["last_logits"] = logits  # stored for the "running accuracy" meter
    if args.fault == "nan":
        probs = jax.nn.softmax(logits)
        onehot = jax.nn.one_hot(y, N_CLS)
        # hand-rolled cross entropy with label smoothing
        t = 0.9 * onehot + 0.1 / N_CLS
        return -(t * jnp.log(probs)).sum(-1).mean()
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


@jax.jit
def train_step(params, opt_state, x, y, step):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, step)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


def ema_scan(losses):
    def body(carry, l):
        new = 0.9 * carry + 0.1 * l
        if args.fault == "scan_dtype":
            new = new.astype(jnp.bfloat16)  # "save memory" in the metrics path
        return new, new
    init = jnp.zeros((), jnp.float32)
    return jax.lax.scan(body, init, losses)


@jax.jit
def eval_step(params, x):
    return model.apply({"params": params}, x).argmax(-1)


if args.log == "tqdm":
    from tqdm import tqdm
    it = tqdm(range(args.steps), desc="train", mininterval=0, ncols=100)
else:
    it = range(args.steps)

hist = []
t0 = time.time()
for step in it:
    extra = 8 if (args.fault == "shape" and step >= args.step) else 0
    x, y = make_batch(64, extra)
    if args.noisy and step == 5:
        warnings.warn("lr schedule 'cosine' has warmup_steps=0; consider setting warmup_steps", UserWarning)
        y = np.asarray(y, dtype=np.int64)
        y = jnp.asarray(y)
    params, opt_state, loss = train_step(params, opt_state, x, y, step)
    lv = float(loss)
    hist.append(lv)
    if args.fault == "tracer_leak" and step == args.step:
        acc = (jnp.argmax(_cache["last_logits"], -1) == y).mean()
        out(f"step {step} running acc {acc}")
    if args.log == "tqdm":
        it.set_postfix(loss=f"{lv:.4f}")
    if step % 10 == 0:
        msg = f"step {step:4d} loss {lv:.4f} lr {lr:g} {(time.time()-t0)/(step+1)*1000:.1f}ms/step"
        if args.log == "tqdm":
            it.write(msg)
        else:
            out(msg)
    if step % 20 == 19:
        ema, _ = ema_scan(jnp.asarray(hist[-20:]))
        out(f"step {step} ema_loss {float(ema):.4f}")

if args.fault == "oom" or args.eval_batch:
    out(f"evaluating on {args.eval_batch} x 64 examples")
    xe = jax.random.normal(jax.random.PRNGKey(1), (args.eval_batch * 64, D_IN))
    pred = eval_step(params, xe)
    frac = float((pred == 0).mean())
    out(f"eval done: {pred.shape} class0 fraction {frac:.3f}")
out("training finished")
