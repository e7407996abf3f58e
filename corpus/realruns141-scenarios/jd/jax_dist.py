"""JAX multi-process data-parallel training (jax.distributed + pmap on host devices).
Launched by torchrun (uses RANK/WORLD_SIZE) or by hand with --pid/--nproc."""
import os, sys, time, argparse, logging
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "die", "nan", "missing-peer", "oom", "shape", "logfeat"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--coord", default="127.0.0.1:46840")
p.add_argument("--pid", type=int, default=None)
p.add_argument("--nproc", type=int, default=None)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--timestamps", action="store_true")
a = p.parse_args()
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
import jax, jax.numpy as jnp, numpy as np, optax
import flax.linen as nn

rank = a.pid if a.pid is not None else int(os.environ.get("RANK", 0))
world = a.nproc if a.nproc is not None else int(os.environ.get("WORLD_SIZE", 1))
if a.timestamps:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [proc {rank}] %(levelname)s %(name)s: %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format=f"[proc {rank}] %(message)s")
log = logging.getLogger("train")

if world > 1:
    nproc = world + 1 if (a.fault == "missing-peer") else world   # misconfigured world size
    jax.distributed.initialize(coordinator_address=a.coord, num_processes=nproc, process_id=rank,
                               initialization_timeout=40, heartbeat_timeout_seconds=10)
log.info("jax %s process %d/%d local devices %s global devices %d", jax.__version__, jax.process_index(),
         jax.process_count(), jax.local_devices(), jax.device_count())

class MLP(nn.Module):
    hidden: int
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(x)

ndev = jax.local_device_count()
rng = np.random.default_rng(rank)
W = np.random.default_rng(0).normal(size=(16, 1)).astype(np.float32)
def batch(bs=64):
    x = rng.normal(size=(ndev, bs, 16)).astype(np.float32)
    y = x @ W + 0.1 * rng.normal(size=(ndev, bs, 1)).astype(np.float32)
    return x, y

model = MLP(a.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))
opt = optax.adam(a.lr)
opt_state = opt.init(params)
rep = lambda t: jax.tree.map(lambda v: np.stack([np.asarray(v)] * ndev), t)
params = rep(params)
opt_state = rep(opt_state)

def loss_fn(params, x, y):
    pred = model.apply(params, x)
    return jnp.mean((pred - y) ** 2)

def step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = jax.lax.pmean(grads, "d")
    loss = jax.lax.pmean(loss, "d")
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss
pstep = jax.pmap(step, axis_name="d")

for s in range(1, a.steps + 1):
    x, y = batch()
    if rank == a.fault_rank and s == a.fault_step:
        if a.fault == "die":
            log.info("step %d: loading next shard", s)
            os.kill(os.getpid(), 9)   # simulate the node's OOM killer / preemption taking this host
        if a.fault == "logfeat":
            x = np.log(x)   # log-transform applied to already standardised (signed) features
        if a.fault == "shape":
            x = x[..., :12]   # feature pipeline dropped columns on this host
        if a.fault == "oom":
            big = jnp.ones((40000, 40000), dtype=jnp.float32)  # activations cache that does not fit
            big = (big @ big).block_until_ready()
    if a.fault == "nan" and s == a.fault_step:
        x = x * 1e3
    params, opt_state, loss = pstep(params, opt_state, x, y)
    l = float(loss[0])
    log.info("step %d loss %.5f", s, l)
    if not np.isfinite(l):
        log.error("non-finite loss at step %d, stopping", s)
        sys.exit(1)
    time.sleep(0.3)
if world > 1:
    log.info("training done, waiting at shutdown barrier")
log.info("final loss %.5f", l)
