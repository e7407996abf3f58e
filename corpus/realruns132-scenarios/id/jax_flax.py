"""JAX/Flax/optax tiny MLP regression; --fault selects an induced failure."""
import argparse, logging, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "shape", "nan", "bigalloc", "dist_kill", "intgrad"])
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=30)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--as-limit-mb", type=int, default=0)
p.add_argument("--ts", action="store_true")
a = p.parse_args()
if a.ts:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
log = logging.getLogger("train")
import jax, jax.numpy as jnp, numpy as np, optax
import flax.linen as nn

rank, world = 0, 1
if a.fault == "dist_kill" or "RANK" in os.environ:
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    jax.distributed.initialize(coordinator_address="127.0.0.1:46331", num_processes=world, process_id=rank,
                               initialization_timeout=60, heartbeat_timeout_seconds=10, shutdown_timeout_seconds=20)
    log.info("process %d/%d devices=%s", jax.process_index(), jax.process_count(), jax.devices())

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(1)(x)

rng = np.random.default_rng(rank)
X = rng.normal(size=(512, 16)).astype(np.float32)
w = rng.normal(size=(16, 1)).astype(np.float32)
y = X @ w + 0.1 * rng.normal(size=(512, 1)).astype(np.float32)
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 16)))
log.info("params: %d", sum(x.size for x in jax.tree_util.tree_leaves(params)))
opt = optax.adam(a.lr)
state = opt.init(params)

def loss_fn(p, xb, yb):
    pred = model.apply(p, xb)
    if a.fault == "nan":
        # relative error in log space: log of a prediction that can go negative
        return jnp.mean((jnp.log(pred) - jnp.log(jnp.abs(yb) + 1.0)) ** 2)
    return jnp.mean((pred - yb) ** 2)

@jax.jit
def step(p, s, xb, yb):
    l, g = jax.value_and_grad(loss_fn)(p, xb, yb)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l

bs = 32
for i in range(a.steps):
    j = (i * bs) % 512
    xb, yb = X[j:j+bs], y[j:j+bs]
    if a.fault == "shape" and i == a.fail_step:
        # feature engineering branch drops the bias-like columns for "late" batches
        xb = xb[:, :12]
    if a.fault == "bigalloc" and i == a.fail_step:
        # full pairwise-distance kernel over an "augmented" dataset
        Xa = jnp.tile(jnp.asarray(X), (400, 1))
        K = jnp.exp(-jnp.sum((Xa[:, None, :] - Xa[None, :, :]) ** 2, -1))
        log.info("kernel mean %f", float(K.mean()))
    if a.fault == "intgrad" and i == a.fail_step:
        xb = (xb * 10).astype(np.int32)
        g = jax.grad(lambda x: jnp.sum(model.apply(params, x)))(xb)
    if a.fault == "dist_kill" and rank == a.fail_rank and i == a.fail_step:
        log.info("rank %d loading augmentation cache", rank)
        if a.as_limit_mb:
            import resource
            vm = int([l for l in open("/proc/self/status") if l.startswith("VmSize")][0].split()[1]) // 1024
            resource.setrlimit(resource.RLIMIT_AS, ((vm + a.as_limit_mb) << 20,) * 2)
        buf = []
        while True:  # unbounded cache growth
            buf.append(np.ones((64, 1024, 1024), np.uint8))
    params, state, l = step(params, state, xb, yb)
    if a.fault == "dist_kill":
        from jax.experimental import multihost_utils
        l = multihost_utils.process_allgather(l).mean()
    if i % 10 == 0 or i == a.steps - 1:
        log.info("step %d loss %.5f", i, float(l))
log.info("training finished")
