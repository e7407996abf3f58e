"""Tiny JAX/Optax sequence regressor (scan-based RNN) with gradient accumulation.
Runs single-process or one process per torchrun rank (jax.distributed, CPU gloo).
--fault: concretization | tracer-leak | scan-dtype | eval-oom | data-oom | none"""
import argparse, os, sys, time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--eval-batch", type=int, default=64)
p.add_argument("--dataset-rows", type=int, default=4096)
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--distributed", action="store_true")
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))

import numpy as np
import jax, jax.numpy as jnp
import optax

if args.distributed:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    coord = f"{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}"
    jax.distributed.initialize(coordinator_address=coord, num_processes=world, process_id=rank)
print(f"rank {rank}: jax {jax.__version__} devices={jax.devices()}", flush=True)

H, D, T = 32, 8, 16
def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {"wx": jax.random.normal(k1, (D, H)) * 0.3, "wh": jax.random.normal(k2, (H, H)) * 0.1,
            "wo": jax.random.normal(k3, (H, 1)) * 0.3, "b": jnp.zeros((H,))}

_debug_states = []
def forward(params, xs):
    def cell(h, x):
        h = jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h
    h0 = jnp.zeros((xs.shape[0], H))
    hT, hs = jax.lax.scan(cell, h0, jnp.swapaxes(xs, 0, 1))
    if args.fault == "tracer-leak" and rank == args.fault_rank:
        _debug_states.append(hT)   # keep last hidden state for the activation-stats logger
    return (hT @ params["wo"])[:, 0]

def loss_fn(params, xs, ys):
    return jnp.mean((forward(params, xs) - ys) ** 2)

tx = optax.adam(3e-3)

@jax.jit
def train_step(params, opt_state, xs, ys):
    # gradient accumulation over 4 micro-batches with lax.scan
    mxs = xs.reshape(4, -1, T, D); mys = ys.reshape(4, -1)
    def micro(carry, batch):
        g_acc, l_acc = carry
        l, g = jax.value_and_grad(loss_fn)(params, *batch)
        return (jax.tree_util.tree_map(jnp.add, g_acc, g), l_acc + l), None
    zero_g = jax.tree_util.tree_map(jnp.zeros_like, params)
    l0 = jnp.int32(0) if (args.fault == "scan-dtype" and rank == args.fault_rank) else jnp.float32(0)
    (g, l), _ = jax.lax.scan(micro, (zero_g, l0), (mxs, mys))
    g = jax.tree_util.tree_map(lambda a: a / 4, g)
    gnorm = optax.global_norm(g)
    if args.fault == "concretization" and rank == args.fault_rank:
        # adaptive clipping: only rescale when the norm is large
        if gnorm > args.clip:
            g = jax.tree_util.tree_map(lambda a: a * args.clip / gnorm, g)
    updates, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, l / 4, gnorm

@jax.jit
def evaluate(params, xs, ys):
    # wide eval: materialises all hidden states for the whole eval set
    def cell(h, x):
        h = jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h
    h0 = jnp.zeros((xs.shape[0], H))
    _, hs = jax.lax.scan(cell, h0, jnp.swapaxes(xs, 0, 1))
    feats = jnp.einsum("tbh,tbk->bhk", hs, hs)   # per-sample hidden covariance
    return jnp.mean((hs[-1] @ params["wo"])[:, 0] - ys) ** 2 + 1e-6 * jnp.mean(feats)

rs = np.random.RandomState(rank)
rows = args.dataset_rows
print(f"rank {rank}: building dataset rows={rows} x {T} x {D}", flush=True)
data_x = rs.randn(rows, T, D).astype(np.float32)
data_y = data_x[:, :, 0].mean(axis=1) * 2.0

params = init(jax.random.PRNGKey(0)); opt_state = tx.init(params)
it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", mininterval=0.5)
for step in it:
    idx = rs.randint(0, rows, 64)
    bx, by = data_x[idx], data_y[idx]
    if args.fault == "nan-data" and rank == args.fault_rank and step >= args.fault_step:
        bx = bx.copy(); bx[7, 3, :] = np.nan   # sensor dropout encoded as NaN in this shard
    params, opt_state, loss, gnorm = train_step(params, opt_state, bx, by)
    if step % 5 == 0:
        msg = f"rank {rank}: step {step} loss {float(loss):.4f} grad_norm {float(gnorm):.3f}"
        if args.tqdm: it.write(msg)
        else: print(msg, flush=True)
    if args.fault == "tracer-leak" and _debug_states and step == args.fault_step:
        print(f"rank {rank}: hidden-state mean {float(jnp.mean(_debug_states[-1])):.4f}", flush=True)
    if step == args.fault_step and args.fault == "eval-oom" and rank == args.fault_rank:
        ex = rs.randn(args.eval_batch, T, D).astype(np.float32)
        print(f"rank {rank}: running eval on {args.eval_batch} sequences", flush=True)
        print(f"rank {rank}: eval loss {float(evaluate(params, ex, ex[:, :, 0].mean(1))):.4f}", flush=True)
print(f"rank {rank}: done", flush=True)
