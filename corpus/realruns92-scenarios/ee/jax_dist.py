"""Multi-process JAX data-parallel training on one host (CPU, gloo collectives).

Process id / count come from --pid/--nproc or from the torchrun environment (RANK, WORLD_SIZE).
--fault:
  none           healthy
  hang_rank      process --rank stops at --step (stuck in a blocking read of a FIFO nobody writes),
                 so its heartbeats continue but collectives stall  (used with an external kill)
  crash_rank     process --rank indexes a per-host shard list that is too short (IndexError) at --step
  wrong_coord    process --rank was given a stale coordinator port (config copied from a previous job)
  slow_start     coordinator (process 0) spends a long time loading before calling initialize
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--pid", type=int, default=None)
p.add_argument("--nproc", type=int, default=None)
p.add_argument("--port", type=int, default=40061)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--init-timeout", type=int, default=30)
p.add_argument("--hb", type=int, default=10)
p.add_argument("--shutdown-timeout", type=int, default=300)
args = p.parse_args()

pid = args.pid if args.pid is not None else int(os.environ.get("RANK", 0))
nproc = args.nproc if args.nproc is not None else int(os.environ.get("WORLD_SIZE", 1))
host = os.environ.get("MASTER_ADDR", "127.0.0.1")
port = args.port
if args.fault == "wrong_coord" and pid == args.rank:
    port = args.port + 7

import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

if args.fault == "slow_start" and pid == 0:
    print(f"[p{pid}] loading tokenizer cache / building vocab ...", flush=True)
    time.sleep(args.init_timeout + 20)

print(f"[p{pid}] jax.distributed.initialize(coordinator={host}:{port}, num_processes={nproc}, process_id={pid})", flush=True)
jax.distributed.initialize(coordinator_address=f"{host}:{port}", num_processes=nproc, process_id=pid,
                           initialization_timeout=args.init_timeout,
                           heartbeat_timeout_seconds=args.hb,
                           shutdown_timeout_seconds=args.shutdown_timeout)
print(f"[p{pid}] process_index={jax.process_index()} process_count={jax.process_count()} "
      f"local={jax.local_devices()} global_devices={len(jax.devices())}", flush=True)

mesh = Mesh(np.array(jax.devices()), ("data",))
repl = NamedSharding(mesh, P())
dsh = NamedSharding(mesh, P("data"))


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(1)(x)


model = Net()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))["params"]
params = jax.device_put(params, repl)
tx = optax.adamw(1e-2)
opt_state = jax.device_put(tx.init(params), repl)

rng = np.random.default_rng(100 + pid)
w = np.linspace(-1, 1, 16).astype(np.float32)
local_bs = 32
shards = [f"shard-{i:03d}" for i in range(nproc * 8)]
if args.fault == "crash_rank":
    shards = shards[: nproc * 8 - 3]  # stale manifest: shard list built before the last 3 shards landed


@jax.jit
def step_fn(params, opt_state, x, y):
    def lf(p):
        return ((model.apply({"params": p}, x)[:, 0] - y) ** 2).mean()
    loss, g = jax.value_and_grad(lf)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, loss


for step in range(args.steps):
    shard = shards[pid * 4 + step % 4]
    if step >= args.step:  # second pass: move on to this host's next block of shards
        shard = shards[nproc * 4 + pid * 4 + step % 4]
    x = rng.normal(size=(local_bs, 16)).astype(np.float32)
    y = x @ w + 0.01 * rng.normal(size=local_bs).astype(np.float32)
    if args.fault == "hang_rank" and pid == args.rank and step == args.step:
        print(f"[p{pid}] step {step}: opening next shard from /work/rr92/ee/tmp/fifo_p{pid} ...", flush=True)
        with open(f"/work/rr92/ee/tmp/fifo_p{pid}") as f:  # blocking: writer never appears
            f.read()
    gx = jax.make_array_from_process_local_data(dsh, x)
    gy = jax.make_array_from_process_local_data(dsh, y)
    params, opt_state, loss = step_fn(params, opt_state, gx, gy)
    if step % 5 == 0:
        print(f"[p{pid}] step {step} shard {shard} loss {float(loss):.5f}", flush=True)

print(f"[p{pid}] done, final loss {float(loss):.5f}", flush=True)
jax.distributed.shutdown()
