"""Multi-process JAX data-parallel training (CPU), processes started from a shell loop."""
import argparse, os, sys, time, logging
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--proc", type=int, required=True)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--coord", default="127.0.0.1:47480")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none", choices=["none", "missing_shard", "oom", "exit"])
p.add_argument("--fail-proc", type=int, default=1)
p.add_argument("--fail-step", type=int, default=10)
p.add_argument("--data-dir", default="data/jaxshards")
p.add_argument("--hb", type=int, default=10)
a = p.parse_args()

logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [proc {a.proc}] %(levelname)s %(message)s")
log = logging.getLogger("train")

import jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
import jax.numpy as jnp
import optax
from jax.experimental import multihost_utils

jax.distributed.initialize(coordinator_address=a.coord, num_processes=a.nprocs, process_id=a.proc,
                           heartbeat_timeout_seconds=a.hb, initialization_timeout=60, shutdown_timeout_seconds=30)
log.info("process %d/%d devices=%s global=%d", jax.process_index(), jax.process_count(),
         jax.local_devices(), jax.device_count())

rng = np.random.default_rng(a.proc)
W_true = np.linspace(-1, 1, 16).astype(np.float32)

def load_shard(step):
    path = os.path.join(a.data_dir, f"shard-{a.proc:03d}-{step // 10:04d}.npy")
    if a.fault == "missing_shard" and a.proc == a.fail_proc:
        return np.load(path)  # this process's shard directory was never synced
    x = rng.normal(size=(64, 16)).astype(np.float32)
    return x

params = {"w": jnp.zeros(16), "b": jnp.zeros(())}
opt = optax.adam(1e-2)
state = opt.init(params)

@jax.jit
def step_fn(params, state, x, y):
    def loss_fn(p):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    upd, state = opt.update(g, state, params)
    return optax.apply_updates(params, upd), state, loss

big = []
for step in range(a.steps):
    if step == a.fail_step and a.proc == a.fail_proc:
        if a.fault == "oom":
            log.info("building evaluation cache")
            # all-pairs similarity of the whole epoch's features (epoch_rows x epoch_rows)
            rows = 64 * a.steps * 4096
            big.append(jnp.zeros((rows, rows // 1024), dtype=jnp.float32).block_until_ready())
        elif a.fault == "exit":
            pass
    x = load_shard(step)
    y = x @ W_true + 0.1
    params, state, loss = step_fn(params, state, jnp.asarray(x), jnp.asarray(y))
    losses = multihost_utils.process_allgather(loss)
    if step % 5 == 0 and a.proc == 0:
        log.info("step %d loss(mean over procs)=%.5f", step, float(np.mean(losses)))
    time.sleep(0.2)
multihost_utils.sync_global_devices("done")
log.info("finished, w[:3]=%s", np.asarray(params["w"][:3]))
jax.distributed.shutdown()
