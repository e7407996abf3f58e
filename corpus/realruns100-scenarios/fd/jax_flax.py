"""Tiny Flax/optax training on CPU; --fault selects a problem."""
import argparse, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=15)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--debug-nans", type=int, default=0)
args = p.parse_args()

import jax, jax.numpy as jnp
import numpy as np
import flax.linen as nn
import optax
if args.debug_nans:
    jax.config.update("jax_debug_nans", True)


class MLP(nn.Module):
    hidden: int = 64
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.classes)(x)


rng = np.random.default_rng(0)
W = rng.normal(size=(32, 10)).astype(np.float32)
model = MLP()
feat_dim = 32
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, feat_dim)))
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
opt_state = tx.init(params)


def loss_fn(params, x, y):
    logits = model.apply(params, x)
    if args.fault == "log_probs":
        # hand-written cross-entropy on softmax probabilities
        probs = jax.nn.softmax(logits)
        return -jnp.mean(jnp.log(probs[jnp.arange(y.shape[0]), y]))
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    gnorm = optax.global_norm(grads)
    if args.fault == "early_stop_in_jit":
        # stop updating once the loss is small enough
        if loss < 0.05:
            return params, opt_state, loss, gnorm
    return params, opt_state, loss, gnorm


print(f"jax {jax.__version__} devices={jax.devices()} backend={jax.default_backend()}", flush=True)
for step in range(args.steps):
    x = rng.normal(size=(64, 32)).astype(np.float32)
    y = (x @ W).argmax(-1)
    if args.fault == "log_probs" and step == args.step:
        x = x * 1e3      # unnormalised batch (feature scaling skipped for this shard)
    if args.fault == "feature_dim" and step == args.step:
        # new data source appends 4 metadata columns
        x = np.concatenate([x, rng.normal(size=(64, 4)).astype(np.float32)], 1)
    t0 = time.time()
    params, opt_state, loss, gnorm = train_step(params, opt_state, jnp.asarray(x), jnp.asarray(y))
    loss = float(loss)
    if step % 5 == 0 or step >= args.step - 1:
        print(f"step {step:3d}  loss {loss:.4f}  grad_norm {float(gnorm):.3f}  ({(time.time()-t0)*1000:.1f} ms)", flush=True)
print("done", flush=True)
