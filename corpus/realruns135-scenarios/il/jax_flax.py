"""JAX/Flax/Optax tiny MLP regression training; --fault selects a failure."""
import argparse, os, sys, time, logging
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--proc-id", type=int, default=-1)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--coord", default="127.0.0.1:46481")
a = p.parse_args()
if a.fault == "debug_nans":
    os.environ["JAX_DEBUG_NANS"] = "True"
import numpy as np
import jax, jax.numpy as jnp
import flax.linen as nn
import optax
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")

if a.proc_id >= 0:
    jax.distributed.initialize(coordinator_address=a.coord, num_processes=a.nprocs, process_id=a.proc_id,
                               initialization_timeout=60, heartbeat_timeout_seconds=10) if 'heartbeat_timeout_seconds' in jax.distributed.initialize.__code__.co_varnames else \
    jax.distributed.initialize(coordinator_address=a.coord, num_processes=a.nprocs, process_id=a.proc_id, initialization_timeout=60)
    log.info("process %d/%d devices=%s local=%s", jax.process_index(), jax.process_count(), jax.device_count(), jax.local_device_count())

class MLP(nn.Module):
    hidden: int
    out: int = 1
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out)(x)

rng = np.random.default_rng(0)
NFEAT = 16
X = rng.normal(size=(4096, NFEAT)).astype(np.float32)
w_true = rng.normal(size=(NFEAT, 1)).astype(np.float32)
Y = X @ w_true + 0.1 * rng.normal(size=(4096, 1)).astype(np.float32)
if a.fault == "dtype64":
    X = jnp.asarray(X, dtype=jnp.float64)  # x64 disabled -> truncation warning only
    Y = jnp.asarray(Y, dtype=jnp.float64)

model = MLP(a.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, NFEAT)))
lr = 1e-3
tx = optax.adam(lr)
opt_state = tx.init(params)
log.info("params: %d", sum(x.size for x in jax.tree_util.tree_leaves(params)))

def loss_fn(params, x, y):
    pred = model.apply(params, x)
    if a.fault == "debug_nans":
        # RMSLE objective (assumes non-negative targets)
        return jnp.mean((jnp.log1p(pred) - jnp.log1p(y)) ** 2)
    return jnp.mean((pred - y) ** 2)

@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

if a.fault == "concretize":
    @jax.jit
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        gnorm = optax.global_norm(grads)
        if gnorm > 10.0:   # clip only when large
            grads = jax.tree_util.tree_map(lambda g: g * (10.0 / gnorm), grads)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

for step in range(a.steps):
    i = (step * a.batch) % (len(X) - a.batch)
    x, y = X[i:i + a.batch], Y[i:i + a.batch]
    if a.fault == "shape" and step == a.fault_step:
        # feature-engineering branch appends an extra column for this shard
        x = np.concatenate([x, np.ones((x.shape[0], 1), np.float32)], axis=1)
    if a.fault == "hostmem" and step == a.fault_step:
        log.info("building full-dataset eval cache on host")
        big = jnp.zeros((a.batch * 4096, 4096 * 4), jnp.float32)
        big.block_until_ready()
    if a.fault == "dist_die" and step == a.fault_step and jax.process_index() == 1:
        log.info("process 1 loading next shard")
        os.kill(os.getpid(), 9)
    params, opt_state, loss = train_step(params, opt_state, x, y)
    if a.proc_id >= 0 and step % 5 == 0:
        # cross-process metric sync
        from jax.experimental import multihost_utils
        tot = multihost_utils.process_allgather(np.asarray(loss))
        loss = float(np.mean(tot))
        time.sleep(0.5)
    if step % 10 == 0 or step == a.steps - 1:
        log.info("step %d loss %.5f", step, float(loss))
log.info("training finished: final loss %.5f", float(loss))
