"""Multi-process JAX/Flax/Optax data-parallel training, started from a shell loop.
Each process computes gradients on its shard; gradients are averaged with process_allgather (gloo CPU collectives).
Flags select a fault: --fault {none,kill,exit,hang}, --fault-proc, --fault-step."""
import argparse, os, sys, time, logging
p = argparse.ArgumentParser()
p.add_argument("--proc-id", type=int, required=True)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--coord", default="127.0.0.1:47810")
p.add_argument("--steps", type=int, default=40)
p.add_argument("--fault", default="none")
p.add_argument("--fault-proc", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--init-timeout", type=int, default=30)
p.add_argument("--hb", type=int, default=10)
p.add_argument("--watchdog", type=int, default=0)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [proc {a.proc_id}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
import jax
jax.config.update("jax_cpu_collectives_implementation", "gloo")
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
from jax.experimental import multihost_utils

jax.distributed.initialize(coordinator_address=a.coord, num_processes=a.nprocs, process_id=a.proc_id,
                           initialization_timeout=a.init_timeout, heartbeat_timeout_seconds=a.hb)
log.info("jax.distributed up: process %d/%d, local devices %s, global devices %d",
         jax.process_index(), jax.process_count(), jax.local_devices(), jax.device_count())

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(10)(x)

rng = np.random.default_rng(1234 + a.proc_id)
W = np.random.default_rng(0).normal(size=(32, 10))
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 32)))
tx = optax.adam(1e-3)
opt_state = tx.init(params)

@jax.jit
def grads_fn(params, x, y):
    def loss_fn(p):
        logits = model.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return jax.value_and_grad(loss_fn)(params)

@jax.jit
def apply_fn(params, opt_state, g):
    updates, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

import faulthandler
for step in range(1, a.steps + 1):
    if a.watchdog:
        faulthandler.dump_traceback_later(a.watchdog, exit=True)
    x = rng.normal(size=(64, 32)).astype(np.float32)
    y = np.argmax(x @ W, axis=1).astype(np.int32)
    if a.fault == "kill" and a.proc_id == a.fault_proc and step == a.fault_step:
        log.info("step %d", step)
        os.kill(os.getpid(), 9)
    if a.fault == "hang" and a.proc_id == a.fault_proc and step == a.fault_step:
        time.sleep(3600)
    loss, g = grads_fn(params, x, y)
    g_all = multihost_utils.process_allgather(g)
    g = jax.tree_util.tree_map(lambda t: t.mean(axis=0), g_all)
    loss = float(multihost_utils.process_allgather(loss).mean())
    params, opt_state = apply_fn(params, opt_state, g)
    if step % 5 == 0:
        log.info("step %d loss %.4f", step, loss)
    time.sleep(0.2)
multihost_utils.sync_global_devices("end")
log.info("training done")
jax.distributed.shutdown()
