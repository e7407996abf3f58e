"""Multi-process JAX data-parallel training on CPU (jax.distributed + gloo CPU collectives).
Rank/world from torchrun-style env (RANK, WORLD_SIZE, MASTER_ADDR) or --rank/--world.
Each process owns one CPU device; batch is sharded over a 1-D mesh across processes.
"""
import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, default=int(os.environ.get("RANK", 0)))
p.add_argument("--world", type=int, default=int(os.environ.get("WORLD_SIZE", 1)))
p.add_argument("--coord", default=os.environ.get("MASTER_ADDR", "127.0.0.1") + ":40741")
p.add_argument("--steps", type=int, default=400)
p.add_argument("--pidfile", default="")
p.add_argument("--heartbeat", type=int, default=10)
p.add_argument("--shard-dir", default="")
p.add_argument("--shard-every", type=int, default=100)
args = p.parse_args()

import numpy as np
import jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(args.coord, num_processes=args.world, process_id=args.rank,
                           initialization_timeout=60, heartbeat_timeout_seconds=args.heartbeat)
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax.experimental import multihost_utils

if args.pidfile:
    with open(f"{args.pidfile}.{args.rank}", "w") as f:
        f.write(str(os.getpid()))

print(f"[rank {args.rank}] process {jax.process_index()}/{jax.process_count()} local={jax.local_devices()} global={jax.device_count()}", flush=True)
mesh = Mesh(np.array(jax.devices()), ("data",))
repl = NamedSharding(mesh, P())
data_sh = NamedSharding(mesh, P("data"))


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.tanh(nn.Dense(64)(x)))


model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))
tx = optax.adam(1e-3)
opt = tx.init(params)
params, opt = jax.device_put((params, opt), repl)


@jax.jit
def step(params, opt, x, y):
    def lf(p):
        return jnp.mean((model.apply(p, x)[:, 0] - y) ** 2)
    l, g = jax.value_and_grad(lf)(params)
    u, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, u), opt, l


rng = np.random.default_rng(args.rank)
w = np.linspace(-1, 1, 16).astype(np.float32)
t0 = time.time()
for s in range(1, args.steps + 1):
    if args.shard_dir and s % args.shard_every == 0:
        part = os.path.join(args.shard_dir, f"part-{args.rank:02d}-{s // args.shard_every:04d}.npy")
        pool = np.load(part)
        print(f"[rank {args.rank}] loaded {part} {pool.shape}", flush=True)
    xl = rng.normal(size=(32, 16)).astype(np.float32)
    yl = np.sin(xl @ w).astype(np.float32)
    x = multihost_utils.host_local_array_to_global_array(xl, mesh, P("data"))
    y = multihost_utils.host_local_array_to_global_array(yl, mesh, P("data"))
    params, opt, loss = step(params, opt, x, y)
    if s % 25 == 0:
        print(f"[rank {args.rank}] step {s} loss {float(loss):.5f} {time.time()-t0:.1f}s", flush=True)
    time.sleep(0.02)
print(f"[rank {args.rank}] done", flush=True)
jax.distributed.shutdown()
