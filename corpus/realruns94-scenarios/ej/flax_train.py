"""Single-process Flax/Optax training of a tiny MLP / token model on synthetic data.

--fault selects a bug:
  none           healthy run
  shape          Dense layer fed a wrongly reshaped batch at --step
  dtype          integer labels mixed into lax.dot with int8 weights (dtype promotion error in lax)
  nan            log(0) in the loss at --step; jax_debug_nans enabled
  tracer_bool    python `if` on a traced value inside jit
  leaked_tracer  storing a tracer into a global inside jit and using it later
  donated        reuse of a donated params buffer after a donate_argnums step
  oom            huge activation under an address-space ulimit
  corrupt_data   one .npy shard on disk is truncated
  empty_data     glob pattern matches nothing
  mesh           shard batch over a mesh axis that does not divide it (needs XLA_FLAGS host devices)
"""
import argparse, glob, logging, os, sys, time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--data-dir", default=None)
p.add_argument("--log", action="store_true", help="python logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--debug-nans", action="store_true")
p.add_argument("--checkify", action="store_true", help="wrap the step in checkify nan_checks")
p.add_argument("--big", type=int, default=0)
p.add_argument("--donate-all", action="store_true")
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
def info(msg):
    if args.log:
        log.info(msg)
    else:
        print(msg, flush=True)

import jax
import jax.numpy as jnp
import numpy as np
import flax.linen as nn
import optax

if args.debug_nans:
    jax.config.update("jax_debug_nans", True)

info(f"jax {jax.__version__} backend={jax.default_backend()} devices={jax.devices()}")


class MLP(nn.Module):
    hidden: int
    out: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(self.out)(x)


def load_data():
    if args.data_dir:
        files = sorted(glob.glob(os.path.join(args.data_dir, "shard-*.npy")))
        info(f"found {len(files)} shards in {args.data_dir}")
        xs = [np.load(f) for f in files]
        X = np.concatenate(xs, axis=0)
    else:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(2048, 32)).astype(np.float32)
    rng = np.random.default_rng(1)
    W = rng.normal(size=(X.shape[1], 10))
    Y = np.argmax(X @ W, axis=-1).astype(np.int32)
    return X, Y


X, Y = load_data()
info(f"dataset: {X.shape[0]} examples, {X.shape[1]} features")
n_batches = X.shape[0] // args.batch
if n_batches == 0:
    pass

model = MLP(args.hidden)
key = jax.random.PRNGKey(0)
params = model.init(key, jnp.zeros((1, X.shape[1])))["params"]
nparams = sum(x.size for x in jax.tree_util.tree_leaves(params))
info(f"model params: {nparams}")
tx = optax.adamw(1e-3, weight_decay=1e-4)
opt_state = tx.init(params)

_leak = []


def loss_fn(params, x, y, poison):
    logits = model.apply({"params": params}, x)
    if args.fault == "nan":
        # per-batch feature standardisation (no epsilon)
        x = (x - x.mean(0)) / x.std(0)
        logits = model.apply({"params": params}, x)
    if args.fault == "tracer_bool":
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        if loss > 10.0:  # clip large losses
            loss = loss / 10.0
        return loss
    if args.fault == "leaked_tracer":
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        _leak.append(logits)  # keep logits around for the metrics hook
        return loss
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


donate = (0, 1) if args.fault == "donated" else ((0, 1, 2, 3) if args.donate_all else ())


def _step(params, opt_state, x, y, poison):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y, poison)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


if args.checkify:
    from jax.experimental import checkify
    _checked = jax.jit(checkify.checkify(_step, errors=checkify.nan_checks))
    def train_step(*a):
        err, out = _checked(*a)
        err.throw()
        return out
else:
    train_step = jax.jit(_step, donate_argnums=donate)


@jax.jit
def accum_step(params, opt_state, xs, ys):
    def body(carry, xy):
        loss_sum, g_sum = carry
        l, g = jax.value_and_grad(loss_fn)(params, xy[0], xy[1], 0.0)
        return (loss_sum + l, jax.tree_util.tree_map(jnp.add, g_sum, g)), None
    init = (jnp.zeros((), jnp.int32), jax.tree_util.tree_map(jnp.zeros_like, params))
    (loss_sum, grads), _ = jax.lax.scan(body, init, (xs, ys))
    grads = jax.tree_util.tree_map(lambda g: g / xs.shape[0], grads)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss_sum / xs.shape[0]

if args.fault == "oom":
    import resource
    lim = 3 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    info(f"RLIMIT_AS set to {lim >> 20} MiB")

it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, mininterval=0)

t0 = time.time()
prev_params = None
for step in it:
    i = step % max(n_batches, 1)
    x = jnp.asarray(X[i * args.batch:(i + 1) * args.batch])
    y = jnp.asarray(Y[i * args.batch:(i + 1) * args.batch])
    poison = jnp.float32(0.0)
    if args.fault == "nan" and step >= args.step:
        # shards from step N on come from the second source, where feature 3 is missing (filled with 0)
        x = x.at[:, 3].set(0.0)
    if args.fault == "shape" and step == args.step:
        # bug: eval-style flattening of a "2-view" batch path applied to train batch
        x = x.reshape(args.batch // 2, -1)
    if args.fault == "dtype" and step == args.step:
        # switch to gradient accumulation over 4 micro-batches (lax.scan)
        params, opt_state, loss = accum_step(params, opt_state, x.reshape(4, -1, x.shape[1]), y.reshape(4, -1))
        continue
    if args.fault == "oom" and step == args.step:
        # bug: pairwise-distance regulariser materialises a (B*k, B*k, D) tensor
        big = jnp.tile(x, (args.big, 1))
        d = jnp.sum((big[:, None, :] - big[None, :, :]) ** 2, axis=-1)
        info(f"pairwise reg: {float(d.mean()):.4f}")
    if args.fault == "mesh" and step == args.step:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        devs = np.array(jax.devices())
        mesh = Mesh(devs.reshape(len(devs)), ("data",))
        xs = x[: args.batch - 2]  # drop_remainder=False tail batch
        x = jax.device_put(xs, NamedSharding(mesh, P("data", None)))
        y = y[: args.batch - 2]
    if args.fault == "donated" and step == args.step:
        prev_params = params  # keep a reference for EMA
    params, opt_state, loss = train_step(params, opt_state, x, y, poison)
    if args.fault == "leaked_tracer" and step == args.step:
        acc = jnp.mean(jnp.argmax(_leak[-1], -1) == y)
        info(f"acc {acc}")
    if args.fault == "donated" and prev_params is not None:
        ema = jax.tree_util.tree_map(lambda a, b: 0.99 * a + 0.01 * b, prev_params, params)
    if step % 5 == 0 or step == args.steps - 1:
        msg = f"step {step:4d} | loss {float(loss):.4f} | {(time.time()-t0)/(step+1)*1000:.1f} ms/step"
        if args.tqdm:
            it.write(msg)
        else:
            info(msg)

info("training finished")
