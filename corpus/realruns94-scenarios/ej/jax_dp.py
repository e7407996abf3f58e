"""Multi-process data-parallel Flax training on CPU with jax.distributed (gloo CPU collectives).

Launch one process per id:  python jax_dp.py --pid I --nproc N --port P [--fault F --fail-proc K --step S]
The process id may also come from RANK/WORLD_SIZE (torchrun used as a plain process launcher).

--fault:
  none          healthy
  missing_shard process K opens data shard that is not there at step S (lazy shard loader)
  corrupt_shard process K reads a truncated .npy shard at step S
  slow_init     process K spends --delay s preparing data before jax.distributed.initialize
  wrong_port    process K is configured with a different coordinator port
  oom           process K has a lower address-space limit and builds a large eval buffer at step S
  hang          process K blocks on a queue that is never filled at step S (prefetch thread died silently)
  uneven        process K gets a local batch that does not match the other processes
  exit_early    process K thinks the run is finished after S steps (different --steps parsed) and exits 0
"""
import argparse, logging, os, sys, time

p = argparse.ArgumentParser()
p.add_argument("--pid", type=int, default=int(os.environ.get("RANK", 0)))
p.add_argument("--nproc", type=int, default=int(os.environ.get("WORLD_SIZE", 2)))
p.add_argument("--port", type=int, default=40580)
p.add_argument("--fault", default="none")
p.add_argument("--fail-proc", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--steps", type=int, default=15)
p.add_argument("--delay", type=float, default=30)
p.add_argument("--init-timeout", type=int, default=20)
p.add_argument("--heartbeat", type=int, default=10)
p.add_argument("--shutdown-timeout", type=int, default=15)
p.add_argument("--data-dir", default="/tmp/ejdata/dp")
p.add_argument("--log", action="store_true")
p.add_argument("--local-batch", type=int, default=16)
p.add_argument("--print-every", type=int, default=3)
args = p.parse_args()

me = args.pid
bad = args.fault != "none" and me == args.fail_proc

if args.log:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [p{me}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("jax_dp")


def info(msg):
    if args.log:
        log.info(msg)
    else:
        print(f"[host {me}] {msg}", flush=True)


import numpy as np
import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")

if bad and args.fault == "slow_init":
    info("building vocabulary / preprocessing local shard ...")
    t = time.time()
    # tokenisation of the local shard, single-threaded and slow
    acc = 0
    while time.time() - t < args.delay:
        acc += sum(range(20000))
    info(f"preprocessing done in {time.time()-t:.1f}s")

port = args.port + (1 if (bad and args.fault == "wrong_port") else 0)
info(f"initializing jax.distributed coordinator=127.0.0.1:{port} num_processes={args.nproc} process_id={me}")
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=args.nproc,
                           process_id=me, initialization_timeout=args.init_timeout,
                           heartbeat_timeout_seconds=args.heartbeat,
                           shutdown_timeout_seconds=args.shutdown_timeout)

import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

info(f"process {jax.process_index()}/{jax.process_count()} local={jax.local_devices()} global={jax.device_count()}")
mesh = Mesh(np.array(jax.devices()), ("data",))
repl = NamedSharding(mesh, P())
dsh = NamedSharding(mesh, P("data"))


class Net(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(10)(x)


model = Net()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 32)))["params"]
params = jax.device_put(params, repl)
tx = optax.sgd(0.05, momentum=0.9)
opt_state = jax.device_put(tx.init(params), repl)


@jax.jit
def train_step(params, opt_state, x, y):
    def lf(p):
        logits = model.apply({"params": p}, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    loss, g = jax.value_and_grad(lf)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, upd), opt_state, loss


W = np.random.default_rng(123).normal(size=(32, 10))


def local_batch(step):
    if args.fault in ("missing_shard", "corrupt_shard") and bad and step == args.step:
        path = os.path.join(args.data_dir, f"train-{me:02d}-{step:04d}.npy")
        info(f"loading shard {path}")
        xb = np.load(path)
    else:
        rng = np.random.default_rng(1000 * me + step)
        xb = rng.normal(size=(args.local_batch, 32)).astype(np.float32)
        if args.fault == "uneven" and bad:
            # last file of this host's split is shorter; no drop_remainder
            rng2 = np.random.default_rng(7)
            xb = rng2.normal(size=(args.local_batch - 3, 32)).astype(np.float32)
    yb = np.argmax(xb @ W, -1).astype(np.int32)
    return xb, yb


if bad and args.fault == "oom":
    import resource
    lim = 2 * 1024**3
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

steps = args.steps
if bad and args.fault == "exit_early":
    steps = args.step

t0 = time.time()
for step in range(steps):
    xb, yb = local_batch(step)
    if bad and args.fault == "hang" and step == args.step:
        import queue, threading
        q = queue.Queue(maxsize=4)
        def producer():
            for i in range(2):
                q.put(local_batch(step + i))
            # bug: producer silently stops after its iterator is exhausted; no sentinel
        threading.Thread(target=producer, daemon=True).start()
        q.get(); q.get()
        info("prefetch queue drained, waiting for next batch")
        xb, yb = q.get()
    if bad and args.fault == "oom" and step == args.step:
        info("building eval embedding cache")
        cache = jnp.zeros((args.local_batch * 4096, 32 * 1024), jnp.float32)
        xb = xb + np.asarray(cache[: xb.shape[0], :32])
    x = jax.make_array_from_process_local_data(dsh, xb)
    y = jax.make_array_from_process_local_data(dsh, yb)
    params, opt_state, loss = train_step(params, opt_state, x, y)
    if step % args.print_every == 0 or step == steps - 1:
        info(f"step {step} loss {float(loss):.4f} ({time.time()-t0:.1f}s)")

info("done, shutting down")
jax.distributed.shutdown()
info("exit")
