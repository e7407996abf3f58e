"""Multi-process JAX (CPU) data-parallel regression, one process per shell-loop iteration.

usage: python jax_multiproc.py PROC_ID NPROC PORT [--fault F --fault-proc P --fault-step S]
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("proc_id", type=int)
p.add_argument("nproc", type=int)
p.add_argument("port", type=int)
p.add_argument("--fault", default="none")
p.add_argument("--fault-proc", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--heartbeat", type=int, default=10)
p.add_argument("--data", default="")
args = p.parse_args()

import jax
import jax.numpy as jnp
import numpy as np
import optax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{args.port}",
    num_processes=args.nproc,
    process_id=args.proc_id,
    heartbeat_timeout_seconds=args.heartbeat,
    initialization_timeout=60,
)
pid = jax.process_index()
tag = f"[proc {pid}/{jax.process_count()}]"
print(f"{tag} devices: local={jax.local_device_count()} global={jax.device_count()}", flush=True)

from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax.experimental import multihost_utils

mesh = Mesh(np.array(jax.devices()), ("data",))
rng = np.random.default_rng(pid)
D = 16
w_true = np.linspace(-1, 1, D).astype(np.float32)


def local_batch(step):
    if args.data:
        # each host reads its own feature file
        arr = np.load(os.path.join(args.data, f"features-{pid:03d}.npy"))
        x = arr[(step * 8) % len(arr):][:8]
    else:
        x = rng.normal(size=(8, D)).astype(np.float32)
    y = x @ w_true + 0.01 * rng.normal(size=(8,)).astype(np.float32)
    return x, y


params = {"w": jnp.zeros((D,), dtype=jnp.float64), "b": jnp.zeros(())}
opt = optax.adam(1e-2)
opt_state = opt.init(params)


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


for step in range(args.steps):
    x, y = local_batch(step)
    x = x.astype(np.float64)  # features are stored as float64 upstream
    if args.fault == "kill" and pid == args.fault_proc and step == args.fault_step:
        # host runs out of memory and the kernel kills this process
        os.kill(os.getpid(), 9)
    gx = multihost_utils.host_local_array_to_global_array(x, mesh, P("data"))
    gy = multihost_utils.host_local_array_to_global_array(y, mesh, P("data"))
    params, opt_state, loss = train_step(params, opt_state, gx, gy)
    if step % 5 == 0 or step == args.steps - 1:
        print(f"{tag} step {step:3d} loss {float(loss):.5f}", flush=True)
    time.sleep(0.2)

multihost_utils.sync_global_devices("end_of_training")
print(f"{tag} done, w[:4]={np.asarray(params['w'])[:4]}", flush=True)
jax.distributed.shutdown()
