"""Data-parallel Flax/Optax MLP trainer, one JAX process per launcher rank.

Launched by torchrun (reads RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT) or standalone
(--process-id/--num-processes). Uses jax.distributed + CPU gloo collectives; a global
mesh shards the batch across processes. --fault selects a bug on --fault-rank at --fault-step.
"""
import argparse, os, sys, time, logging, pickle

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--features", type=int, default=16)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--coordinator", default=None)
p.add_argument("--process-id", type=int, default=None)
p.add_argument("--num-processes", type=int, default=None)
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--resume", action="store_true")
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--init-timeout", type=int, default=60)
p.add_argument("--opt", default="adam")
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

rank = args.process_id if args.process_id is not None else int(os.environ.get("RANK", 0))
world = args.num_processes if args.num_processes is not None else int(os.environ.get("WORLD_SIZE", 1))
if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] [proc {rank}] %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[proc {rank}] {msg}", flush=True)

import numpy as np
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax
from jax.sharding import NamedSharding, PartitionSpec as P

jax.config.update("jax_cpu_collectives_implementation", "gloo")

if world > 1:
    coord = args.coordinator or f"{os.environ.get('MASTER_ADDR','127.0.0.1')}:{int(os.environ.get('MASTER_PORT', 38500)) + 1}"
    log(f"jax.distributed.initialize(coordinator={coord}, num_processes={world}, process_id={rank})")
    jax.distributed.initialize(coordinator_address=coord, num_processes=world, process_id=rank,
                               initialization_timeout=args.init_timeout)
    if args.fault == "init-twice" and rank == args.fault_rank:
        # "re-initialise" after a config reload, as a refactored main() did
        jax.distributed.initialize(coordinator_address=coord, num_processes=world, process_id=rank)
log(f"jax {jax.__version__} process {jax.process_index()}/{jax.process_count()} "
    f"local devices {jax.local_devices()} global devices {len(jax.devices())}")

class MLP(nn.Module):
    hidden: int
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(1)(x)

mesh = jax.make_mesh((jax.device_count(),), ("dp",))
repl = NamedSharding(mesh, P())
data_sh = NamedSharding(mesh, P("dp"))

model = MLP(args.hidden)
key = jax.random.PRNGKey(0)
params = model.init(key, jnp.ones((1, args.features)))
if args.opt == "adam":
    tx = optax.adam(args.lr)
else:  # "clip-adamw": gradient clipping + weight decay added for the fine-tuning phase
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(args.lr, weight_decay=1e-4))
opt_state = tx.init(params)

true_w = np.random.RandomState(123).randn(args.features, 1).astype(np.float32)
rs = np.random.RandomState(1000 + rank)

def local_batch(step):
    x = rs.randn(args.batch, args.features).astype(np.float32)
    y = x @ true_w + 0.1 * rs.randn(args.batch, 1).astype(np.float32)
    if args.fault == "shape" and rank == args.fault_rank and step >= args.fault_step:
        # this shard's preprocessing appended a bias column
        x = np.concatenate([x, np.ones((args.batch, 1), np.float32)], axis=1)
    if args.fault == "nan-data" and rank == args.fault_rank and step >= args.fault_step:
        x[3, 2] = np.nan  # a corrupt feature value from this shard
    if args.fault == "log-target" and rank == args.fault_rank and step >= args.fault_step:
        y = np.abs(y); y[0] = 0.0
    return x, y

def loss_fn(params, x, y):
    pred = model.apply(params, x)
    if args.fault == "log-target":
        # log-space loss: log(0) target on one shard
        return jnp.mean((jnp.log(pred ** 2 + 1.0) - jnp.log(y)) ** 2)
    return jnp.mean((pred - y) ** 2)

def _train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss

if args.noisy:
    import warnings
    train_step = jax.jit(_train_step, donate_argnums=(0, 1, 2))
    ema = jnp.zeros((args.hidden,), dtype=jnp.float64)  # float64 EMA buffer (x64 is off)
else:
    train_step = jax.jit(_train_step)

start_step = 0
if args.ckpt_dir and args.resume:
    path = os.path.join(args.ckpt_dir, f"ckpt_rank{rank}.pkl")
    log(f"resuming from {path}")
    with open(path, "rb") as f:
        blob = pickle.load(f)
    from flax import serialization
    start_step = blob["step"]
    params = serialization.from_state_dict(params, blob["params"])
    opt_state = serialization.from_state_dict(opt_state, blob["opt_state"])
    log(f"resumed at step {start_step}")

params = jax.device_put(params, repl)
opt_state = jax.device_put(opt_state, repl)

t0 = time.time()
for step in range(start_step, start_step + args.steps):
    x, y = local_batch(step)
    gx = jax.make_array_from_process_local_data(data_sh, x)
    gy = jax.make_array_from_process_local_data(data_sh, y)
    params, opt_state, loss = train_step(params, opt_state, gx, gy)
    if step % args.log_every == 0 or step == start_step + args.steps - 1:
        lv = float(loss)
        log(f"step {step:4d} loss {lv:.5f} ({(time.time()-t0)/(step-start_step+1):.3f}s/it)")
        if args.fault in ("log-target",) and not np.isfinite(lv):
            raise FloatingPointError(f"Loss is {lv} at step {step}, stopping training")

if args.ckpt_dir:
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"ckpt_rank{rank}.pkl")
    from flax import serialization
    host = jax.tree_util.tree_map(lambda a: np.asarray(a), {"params": serialization.to_state_dict(params),
                                                            "opt_state": serialization.to_state_dict(opt_state)})
    host["step"] = start_step + args.steps
    with open(path, "wb") as f:
        pickle.dump(host, f)
    log(f"saved checkpoint {path}")
log("training finished")
if world > 1:
    jax.distributed.shutdown()
