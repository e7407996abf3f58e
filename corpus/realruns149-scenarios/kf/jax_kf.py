"""Tiny JAX/optax regression with optax.apply_if_finite skipping a bad batch. --bad-step N"""
import argparse, logging, sys, warnings
import numpy as np, jax, jax.numpy as jnp, optax
p = argparse.ArgumentParser(); p.add_argument("--bad-step", type=int, default=7); p.add_argument("--steps", type=int, default=30)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stdout)
log = logging.getLogger("jaxtrain")
log.info("devices: %s", jax.devices())
rng = np.random.default_rng(0)
W = {"w": jnp.zeros((8, 1)), "b": jnp.zeros((1,))}
opt = optax.apply_if_finite(optax.adam(1e-1), max_consecutive_errors=5)
st = opt.init(W)
def loss_fn(p, x, y): return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
@jax.jit
def step(p, s, x, y):
    l, g = jax.value_and_grad(loss_fn)(p, x, y)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l
true_w = rng.normal(size=(8, 1))
for i in range(a.steps):
    x = rng.normal(size=(64, 8)).astype(np.float32); y = (x @ true_w).astype(np.float32)
    if i == a.bad_step:
        x[3, 2] = np.float32(np.log(np.float32(0.0)) * 0)  # a corrupt record with a NaN feature
    W, st, l = step(W, st, jnp.asarray(x), jnp.asarray(y))
    nf = int(st.notfinite_count)
    if not np.isfinite(float(l)):
        log.warning("step %d: loss=%s, update skipped by apply_if_finite (notfinite_count=%d, total_notfinite=%d)", i, float(l), nf, int(st.total_notfinite))
    elif i % 5 == 0 or i == a.steps - 1:
        log.info("step %d loss %.5f", i, float(l))
log.info("finished %d steps, final loss %.5f, skipped updates %d", a.steps, float(l), int(st.total_notfinite))
