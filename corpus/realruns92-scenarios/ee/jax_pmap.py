"""Data / tensor parallel JAX training on fake host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=N).

--mode pmap       classic pmap data parallel; --ndev is the device count from the run config
--mode tp         jit + NamedSharding over a ("data","model") mesh; hidden dim sharded on "model"
--tp N            model-parallel size for --mode tp
"""
import argparse
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--mode", default="pmap")
p.add_argument("--ndev", type=int, default=None, help="devices the config was written for")
p.add_argument("--tp", type=int, default=1)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--legacy-replicate", action="store_true", help="old code path: jax.device_put_replicated")
args = p.parse_args()

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS','')}", flush=True)
print(f"jax {jax.__version__}: {jax.device_count()} devices: {jax.devices()}", flush=True)

D, H, C = 32, args.hidden, 8
rng = np.random.default_rng(0)
Wt = rng.normal(size=(D, C)).astype(np.float32)
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
params = {"w1": jax.random.normal(k1, (D, H)) * 0.1, "b1": jnp.zeros(H),
          "w2": jax.random.normal(k2, (H, C)) * 0.1, "b2": jnp.zeros(C)}
tx = optax.sgd(0.1, momentum=0.9)


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def batch(n):
    x = rng.normal(size=(n, D)).astype(np.float32)
    return x, (x @ Wt).argmax(-1)


if args.mode == "pmap":
    ndev = args.ndev or jax.local_device_count()
    per_dev = 16

    def step(p, o, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        g = jax.lax.pmean(g, "batch")
        l = jax.lax.pmean(l, "batch")
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, l

    pstep = jax.pmap(step, axis_name="batch")
    if args.legacy_replicate:
        rp = jax.device_put_replicated(params, jax.local_devices()[:ndev])
        ro = jax.device_put_replicated(tx.init(params), jax.local_devices()[:ndev])
    else:
        rep = lambda t: jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (ndev,) + a.shape), t)
        rp, ro = rep(params), rep(tx.init(params))
    print(f"pmap data parallel over {ndev} devices, global batch {ndev*per_dev}", flush=True)
    for s in range(args.steps):
        x, y = batch(ndev * per_dev)
        x = x.reshape(ndev, per_dev, D)
        y = y.reshape(ndev, per_dev)
        rp, ro, l = pstep(rp, ro, x, y)
        if s % 10 == 0:
            print(f"step {s} loss {float(l[0]):.4f}", flush=True)
else:
    n = jax.device_count()
    mesh = Mesh(np.array(jax.devices()).reshape(n // args.tp, args.tp), ("data", "model"))
    print(f"mesh {dict(mesh.shape)}", flush=True)
    shard = {"w1": NamedSharding(mesh, P(None, "model")), "b1": NamedSharding(mesh, P("model")),
             "w2": NamedSharding(mesh, P("model", None)), "b2": NamedSharding(mesh, P())}
    params = jax.device_put(params, shard)
    opt = tx.init(params)
    dsh = NamedSharding(mesh, P("data"))

    @jax.jit
    def step(p, o, x, y):
        l, g = jax.value_and_grad(loss_fn)(p, x, y)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, l

    for s in range(args.steps):
        x, y = batch(64)
        x, y = jax.device_put(x, dsh), jax.device_put(y, dsh)
        params, opt, l = step(params, opt, x, y)
        if s % 10 == 0:
            print(f"step {s} loss {float(l):.4f}", flush=True)
print("done", flush=True)
