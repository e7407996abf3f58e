"""Two-process JAX data-parallel toy on CPU (jax.distributed + gloo CPU collectives)."""
import argparse, time, os
p = argparse.ArgumentParser()
p.add_argument("--process-id", type=int, required=True)
p.add_argument("--num-processes", type=int, default=2)
p.add_argument("--coordinator", default="127.0.0.1:42430")
p.add_argument("--steps", type=int, default=400)
args = p.parse_args()
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(args.coordinator, num_processes=args.num_processes, process_id=args.process_id,
                           heartbeat_timeout_seconds=10, initialization_timeout=60)
from jax.experimental import multihost_utils
import optax
pid = jax.process_index()
print(f"[proc {pid}] jax {jax.__version__} process {pid}/{jax.process_count()} local={jax.local_devices()} global={len(jax.devices())}", flush=True)
rng = np.random.default_rng(pid)
W = np.random.default_rng(0).normal(size=(16, 1)).astype(np.float32)
w = jnp.zeros((16, 1)); tx = optax.sgd(0.05); st = tx.init(w)
loss_grad = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
for step in range(args.steps):
    x = rng.normal(size=(64, 16)).astype(np.float32); y = x @ W
    loss, g = loss_grad(w, x, y)
    g_all = multihost_utils.process_allgather(g)          # cross-process gradient exchange
    g = jnp.mean(g_all, axis=0)
    upd, st = tx.update(g, st); w = optax.apply_updates(w, upd)
    if step % 10 == 0:
        print(f"[proc {pid}] step {step} loss {float(loss):.5f}", flush=True)
    time.sleep(0.1)
print(f"[proc {pid}] done", flush=True)
jax.distributed.shutdown()
