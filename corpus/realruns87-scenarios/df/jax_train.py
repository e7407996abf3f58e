"""Small Flax/Optax regression trainer, optionally multi-process via jax.distributed
(launched by torchrun --no-python, reading RANK/WORLD_SIZE/MASTER_ADDR).

--fault selects a real bug/misconfiguration, --fault-rank which rank has it, --fault-step when.
"""
import argparse
import logging
import os
import pickle
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--ckpt-dir", default="/work/rr87/df/ckpt")
p.add_argument("--resume", default="")
p.add_argument("--coord-port", type=int, default=37811)
p.add_argument("--dist", action="store_true")
p.add_argument("--noise", action="store_true", help="legacy data prep that warns")
p.add_argument("--ts-logging", "--log", dest="ts_logging", action="store_true", help="use logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0, help="simulated data loading time per step")
p.add_argument("--init-timeout", type=int, default=30)
p.add_argument("--heartbeat", type=int, default=10)
p.add_argument("--shutdown-timeout", type=int, default=20)
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))

if args.ts_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

import jax
import jax.numpy as jnp
import numpy as np
import flax.linen as nn
import optax

if args.fault == "nan":
    jax.config.update("jax_debug_nans", True)

mine = rank == args.fault_rank

if args.dist:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = args.coord_port
    if args.fault == "wrong-coord-port" and mine:
        port = args.coord_port + 1  # typo'd coordinator port in this rank's config
    if args.fault == "missing-peer" and mine:
        log("data shard not staged yet, waiting before joining ...")
        time.sleep(args.init_timeout + 15)
    log(f"jax.distributed.initialize(coordinator={addr}:{port}, num_processes={world}, process_id={rank})")
    jax.distributed.initialize(coordinator_address=f"{addr}:{port}", num_processes=world,
                               process_id=rank, initialization_timeout=args.init_timeout,
                               heartbeat_timeout_seconds=args.heartbeat,
                               shutdown_timeout_seconds=args.shutdown_timeout)
    if args.fault == "init-twice" and mine:
        # helper module "utils.setup_cluster()" calls initialize again
        jax.distributed.initialize(coordinator_address=f"{addr}:{port}", num_processes=world,
                                   process_id=rank)
    log(f"process {jax.process_index()}/{jax.process_count()} devices={jax.devices()} local={jax.local_devices()}")
else:
    log(f"devices={jax.devices()}")


class MLP(nn.Module):
    hidden: int
    out: int = 1

    @nn.compact
    def __call__(self, x):
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        x = nn.Dense(self.hidden)(x)
        x = nn.relu(x)
        return nn.Dense(self.out)(x)


IN = 16
rng = np.random.default_rng(1234 + rank)
W_true = np.random.default_rng(0).normal(size=(IN, 1)).astype(np.float32)


def make_batch(step):
    x = rng.normal(size=(args.batch, IN)).astype(np.float32)
    y = x @ W_true + 0.1 * rng.normal(size=(args.batch, 1)).astype(np.float32)
    if args.fault == "shape" and mine and step >= args.fault_step:
        # feature pipeline change: a new column appended on this rank's loader only
        x = np.concatenate([x, np.ones((args.batch, 1), np.float32)], axis=1)
    if args.fault == "nan":
        y = np.abs(y) * 3.0  # positive targets for the log-space loss
        if mine and step >= args.fault_step:
            y = y - 4.0  # "centered" targets from the new normaliser: log1p sees < -1
    return jnp.asarray(x), jnp.asarray(y)


if args.noise:
    import warnings
    scale = jnp.asarray(np.linspace(0.5, 1.5, IN), dtype=jnp.float64)  # legacy float64 feature scale
    warnings.warn("Feature statistics cache is older than 7 days; recomputing on the fly", RuntimeWarning)

model = MLP(args.hidden)
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, IN)))
tx = optax.adam(1e-3)
opt_state = tx.init(params)
nparams = sum(x.size for x in jax.tree_util.tree_leaves(params))
log(f"model params={nparams} optimizer=adam lr=1e-3")

if args.resume:
    path = args.resume
    log(f"resuming from {path}")
    if path.endswith(".pkl"):
        with open(path, "rb") as f:
            state = pickle.load(f)
        params = state["params"]
        if args.fault == "opt-mismatch":
            tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=0.01))
        opt_state = state["opt_state"]
    else:
        import orbax.checkpoint as ocp
        ckptr = ocp.StandardCheckpointer()
        target = {"params": params, "opt_state": opt_state}
        restored = ckptr.restore(os.path.abspath(path), target)
        params, opt_state = restored["params"], restored["opt_state"]
    log("resume ok")

leaked = []


def loss_fn(params, x, y):
    pred = model.apply(params, x)
    if args.fault == "tracer-leak":
        leaked.append(pred)  # debugging aid: keep last predictions around
    if args.fault == "nan":  # mean squared log error
        return jnp.mean((jnp.log1p(jnp.abs(pred)) - jnp.log1p(y)) ** 2)
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


@jax.jit
def clipped_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    gnorm = optax.global_norm(grads)
    if gnorm > 10.0:  # skip outlier batches
        return params, opt_state, loss
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


@jax.jit
def big_eval(params, x):
    # evaluates on a "full" synthetic eval set, materialised inside jit
    big = jnp.tile(x, (args.fault_step, 1))
    h = model.apply(params, big)
    return jnp.mean(h)


it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", mininterval=0, file=sys.stderr)

t0 = time.time()
for step in it:
    x, y = make_batch(step)
    if args.fault == "concretization" and step >= args.fault_step:
        params, opt_state, loss = clipped_step(params, opt_state, x, y)
    else:
        params, opt_state, loss = train_step(params, opt_state, x, y)
    if args.fault == "tracer-leak" and step >= args.fault_step and mine:
        log(f"last pred mean {jnp.mean(leaked[-1])}")
    if args.fault == "oom" and mine and step == 3:
        log("running full eval")
        v = big_eval(params, x)
        log(f"eval mean {float(v):.4f}")
    if args.fault == "kill-peer" and mine and step == args.fault_step:
        log("step %d: writing shard cache" % step)
    if args.dist:
        from jax.experimental import multihost_utils
        losses = multihost_utils.process_allgather(loss)
        gl = float(np.mean(np.asarray(losses)))
    else:
        gl = float(loss)
    if step % 2 == 0 and not args.tqdm:
        log(f"step {step} loss {gl:.5f} ({(time.time()-t0)/(step+1):.3f}s/it)")
    if args.tqdm:
        it.set_postfix(loss=f"{gl:.4f}")
    if args.step_sleep:
        time.sleep(args.step_sleep)

if rank == 0:
    os.makedirs(args.ckpt_dir, exist_ok=True)
    if args.fault == "orbax-save" or args.ckpt_dir.endswith("_orbax"):
        import orbax.checkpoint as ocp
        ckptr = ocp.StandardCheckpointer()
        out = os.path.abspath(os.path.join(args.ckpt_dir, f"step_{args.steps}"))
        ckptr.save(out, {"params": params, "opt_state": opt_state}, force=True)
        ckptr.wait_until_finished()
        log(f"saved orbax checkpoint to {out}")
    else:
        out = os.path.join(args.ckpt_dir, f"state_{args.steps}.pkl")
        with open(out, "wb") as f:
            pickle.dump({"params": jax.device_get(params), "opt_state": jax.device_get(opt_state),
                         "step": args.steps}, f)
        log(f"saved checkpoint to {out}")
if args.dist:
    from jax.experimental import multihost_utils
    multihost_utils.sync_global_devices("end")
log("training done")
