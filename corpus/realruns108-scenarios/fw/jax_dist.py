"""Multi-process data-parallel JAX training on CPU (jax.distributed, gloo CPU collectives).

Launched by torchrun (reads RANK / WORLD_SIZE / LOCAL_RANK) or by a shell loop that sets them.
The JAX coordinator listens on --coord-port (process 0).

--fault:
  none        healthy
  shard-shape rank --rank reads a shard file with an extra column from step --step
  hang-kill   rank --rank stalls in a slow data read at step --step (gets killed from outside)
  nproc       coordinator told a world size one larger than launched (stale config)
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--coord-port", type=int, default=43531)
p.add_argument("--heartbeat", type=int, default=10)
p.add_argument("--init-timeout", type=int, default=30)
args = p.parse_args()

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from jax.experimental import multihost_utils

nproc = world + 1 if args.fault == "nproc" else world
print(f"[rank {rank}] connecting to coordinator 127.0.0.1:{args.coord_port} as process {rank}/{nproc}", flush=True)
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.coord_port}", num_processes=nproc,
                           process_id=rank, initialization_timeout=args.init_timeout,
                           heartbeat_timeout_seconds=args.heartbeat, shutdown_timeout_seconds=15)
print(f"[rank {rank}] jax.process_index()={jax.process_index()} process_count={jax.process_count()} "
      f"global devices={len(jax.devices())} local={jax.local_devices()}", flush=True)


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(4)(x)


FEAT = 24
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, FEAT)))
tx = optax.sgd(0.05, momentum=0.9)
opt_state = tx.init(params)
rng = np.random.default_rng(100 + rank)
W = np.random.default_rng(0).normal(size=(FEAT, 4)).astype(np.float32)


@jax.jit
def grads_fn(params, x, y):
    def lf(p):
        logits = model.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return jax.value_and_grad(lf)(params)


@jax.jit
def apply_fn(params, opt_state, g):
    upd, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, upd), opt_state


def load_shard(step):
    feat = FEAT
    if args.fault == "shard-shape" and rank == args.rank and step >= args.step:
        feat = FEAT + 1  # shard written by the new export job (extra id column)
    x = rng.normal(size=(32, feat)).astype(np.float32)
    y = (x[:, :FEAT] @ W).argmax(-1)
    if args.fault == "hang-kill" and rank == args.rank and step >= args.step:
        print(f"[rank {rank}] step {step}: waiting for shard from object store ...", flush=True)
        time.sleep(3600)
    return x, y


t0 = time.time()
for step in range(1, args.steps + 1):
    x, y = load_shard(step)
    loss, g = grads_fn(params, x, y)
    # average gradients over processes
    flat, tree = jax.tree_util.tree_flatten(g)
    gathered = multihost_utils.process_allgather(flat)
    g = jax.tree_util.tree_unflatten(tree, [a.mean(0) for a in gathered])
    params, opt_state = apply_fn(params, opt_state, g)
    if step % 10 == 0:
        gl = multihost_utils.process_allgather(loss)
        print(f"[rank {rank}] step {step} loss {float(loss):.4f} mean {float(gl.mean()):.4f} "
              f"({time.time()-t0:.1f}s)", flush=True)

multihost_utils.sync_global_devices("end")
print(f"[rank {rank}] finished", flush=True)
jax.distributed.shutdown()
