"""Tiny Flax/Optax MLP regression trainer.

--fault none|shape|nan|shard|die|oom   --fault-proc P  --fault-step S
Multi-process: set JAX_COORD, JAX_NPROC, JAX_PID env (started from a shell loop).
"""
import argparse, os, sys, time, logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-proc", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--debug-nans", action="store_true")
args = p.parse_args()

import jax
import jax.numpy as jnp
import numpy as np
import flax.linen as nn
import optax

if args.debug_nans:
    jax.config.update("jax_debug_nans", True)

nproc = int(os.environ.get("JAX_NPROC", "1"))
pid = int(os.environ.get("JAX_PID", "0"))
if nproc > 1:
    jax.distributed.initialize(coordinator_address=os.environ["JAX_COORD"],
                               num_processes=nproc, process_id=pid,
                               initialization_timeout=60)

logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s [proc {pid}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("trainer")
log.info("jax %s, backend=%s, process %d/%d, local devices=%s, global devices=%d",
         jax.__version__, jax.default_backend(), jax.process_index(), jax.process_count(),
         jax.local_devices(), jax.device_count())


class MLP(nn.Module):
    hidden: int
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(1)(x)


IN = 16
rng = np.random.default_rng(1234 + pid)
W_true = rng.normal(size=(IN, 1)).astype(np.float32)

def batch(step):
    x = rng.normal(size=(args.batch, IN)).astype(np.float32)
    y = x @ W_true + 0.1 * rng.normal(size=(args.batch, 1)).astype(np.float32)
    if args.fault == "shape" and step == args.fault_step:
        # data pipeline change: features got flattened with the target column appended
        x = np.concatenate([x, y], axis=1)
    if args.fault == "nan" and step >= args.fault_step:
        # feature normalisation with a std that is zero for a constant column
        col = np.full((args.batch, 1), 3.0, np.float32)
        x[:, :1] = col / col.std()  # scale by std (0 for a constant column)
    return jnp.asarray(x), jnp.asarray(y)

model = MLP(args.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, IN)))
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(args.lr))
opt_state = tx.init(params)
nparams = sum(x.size for x in jax.tree_util.tree_leaves(params))
log.info("model params: %d", nparams)

if args.fault == "shard" or args.fault == "healthy-shard":
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    devs = np.array(jax.devices())
    mesh = Mesh(devs, ("data",))
    log.info("mesh: %s", mesh.shape)
    data_sharding = NamedSharding(mesh, P("data"))

@jax.jit
def train_step(params, opt_state, x, y):
    def loss_fn(p):
        pred = model.apply(p, x)
        return jnp.mean((pred - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss

if nproc > 1:
    from jax.experimental import multihost_utils

for step in range(args.steps):
    t0 = time.time()
    x, y = batch(step)
    if args.fault in ("shard", "healthy-shard"):
        if args.fault == "shard" and step == args.fault_step:
            x, y = x[:-2], y[:-2]   # last partial batch of the epoch
        x = jax.device_put(x, data_sharding)
        y = jax.device_put(y, data_sharding)
    if args.fault == "oom" and step == args.fault_step:
        log.info("building feature cache for the eval set")
        cache = jnp.zeros((200_000, 200_000), jnp.float32)
        cache.block_until_ready()
    if args.fault == "die" and step == args.fault_step and pid == args.fault_proc:
        log.info("loading next shard")
        os.kill(os.getpid(), 9)
    params, opt_state, loss = train_step(params, opt_state, x, y)
    loss = float(loss)
    if nproc > 1:
        g = multihost_utils.process_allgather(jnp.array([loss]))
        loss = float(np.mean(g))
    log.info("step %d loss %.5f (%.1f ms)", step, loss, 1000 * (time.time() - t0))
    if nproc > 1:
        time.sleep(0.5)

log.info("training done, final loss %.5f", loss)
if nproc > 1:
    jax.distributed.shutdown()
