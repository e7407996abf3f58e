"""Multi-process JAX data-parallel training (jax.distributed on localhost, CPU devices, gloo collectives).

Rank/world come from torchrun-style env (RANK, WORLD_SIZE, MASTER_ADDR) or from --rank/--world
(for mp.spawn / manual launch).

--fault:
  none         healthy
  die          rank --rank-fault is SIGKILLed (like the OOM killer) at --step
  batch        rank --rank-fault builds its local shard with a different per-host batch (config override)
  nproc        coordinator told num_processes=world+1 (stale config), nobody else comes
  masterport   coordinator put on MASTER_PORT (already owned by torchrun's TCPStore)
  exit         rank --rank-fault calls sys.exit(0) early after "finishing" its data shard
  devcount     rank --rank-fault exposes 1 CPU device instead of --local-devices
"""
import argparse
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank-fault", type=int, default=1)
p.add_argument("--step", type=int, default=20)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--rank", type=int, default=None)
p.add_argument("--world", type=int, default=None)
p.add_argument("--coord-port", type=int, default=41551)
p.add_argument("--local-devices", type=int, default=2)
p.add_argument("--init-timeout", type=int, default=30)
p.add_argument("--hb", type=int, default=None, help="heartbeat timeout seconds, if supported")
args = p.parse_args()


def main(rank=None, world=None):
    rank = int(os.environ.get("RANK", 0)) if rank is None else rank
    world = int(os.environ.get("WORLD_SIZE", 1)) if world is None else world
    ndev = args.local_devices
    if args.fault == "devcount" and rank == args.rank_fault:
        ndev = 1  # this host's launch script exports a different XLA_FLAGS
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={ndev}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = args.coord_port
    if args.fault == "masterport":
        port = int(os.environ["MASTER_PORT"])
    nproc = world + 1 if args.fault == "nproc" else world
    kw = dict(coordinator_address=f"{host}:{port}", num_processes=nproc, process_id=rank,
              initialization_timeout=args.init_timeout)
    if args.hb is not None:
        kw["heartbeat_timeout_seconds"] = args.hb
    print(f"[host {rank}] jax.distributed.initialize({kw['coordinator_address']}, num_processes={nproc}, process_id={rank})", flush=True)
    jax.distributed.initialize(**kw)
    print(f"[host {rank}] process_index={jax.process_index()} process_count={jax.process_count()} "
          f"local={jax.local_device_count()} global={jax.device_count()}", flush=True)

    mesh = Mesh(np.array(jax.devices()), ("data",))
    repl = NamedSharding(mesh, P())
    dsh = NamedSharding(mesh, P("data"))

    FEAT, HID = 16, 64
    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (FEAT, HID)) * 0.1, "b1": jnp.zeros(HID),
              "w2": jax.random.normal(k2, (HID, 1)) * 0.1, "b2": jnp.zeros(1)}
    params = jax.device_put(params, repl)
    tx = optax.adamw(3e-3)
    opt_state = jax.jit(tx.init, out_shardings=repl)(params)

    def loss_fn(p_, x, y):
        h = jnp.tanh(x @ p_["w1"] + p_["b1"])
        return jnp.mean((h @ p_["w2"] + p_["b2"] - y) ** 2)

    @jax.jit
    def step_fn(p_, o, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p_, x, y)
        u, o = tx.update(g, o, p_)
        return optax.apply_updates(p_, u), o, loss

    rng = np.random.default_rng(100 + rank)
    wt = np.random.default_rng(0).normal(size=(FEAT, 1)).astype(np.float32)
    per_host = 16
    if args.fault == "batch" and rank == args.rank_fault:
        per_host = 24  # --per_host_batch override left in this host's launch script
    t0 = time.time()
    for step in range(1, args.steps + 1):
        if args.fault == "die" and rank == args.rank_fault and step == args.step:
            print(f"[host {rank}] step {step}: loading next shard", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if args.fault == "exit" and rank == args.rank_fault and step == args.step:
            print(f"[host {rank}] shard exhausted after {step-1} steps, done.", flush=True)
            sys.exit(0)
        xl = rng.normal(size=(per_host, FEAT)).astype(np.float32)
        yl = xl @ wt + 0.05 * rng.normal(size=(per_host, 1)).astype(np.float32)
        x = jax.make_array_from_process_local_data(dsh, xl)
        y = jax.make_array_from_process_local_data(dsh, yl)
        params, opt_state, loss = step_fn(params, opt_state, x, y)
        if step % 5 == 0 or step == 1:
            print(f"[host {rank}] step {step:3d} loss {float(loss):.4f} ({time.time()-t0:.1f}s)", flush=True)
    print(f"[host {rank}] done", flush=True)
    jax.distributed.shutdown()


def _spawn_entry(rank, world):
    main(rank, world)


if __name__ == "__main__":
    if os.environ.get("USE_MP_SPAWN"):
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        mp.spawn(_spawn_entry, args=(args.world,), nprocs=args.world, join=True)
    else:
        main(args.rank, args.world)
