"""JAX / Flax (nnx) / Optax training jobs."""
import argparse, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--steps", type=int, default=300)
p.add_argument("--proc-id", type=int, default=0)
p.add_argument("--nprocs", type=int, default=1)
p.add_argument("--coord", default="127.0.0.1:46075")
args = p.parse_args()
import numpy as np
import jax, jax.numpy as jnp
import optax
from flax import nnx

class MLP(nnx.Module):
    def __init__(self, din, dh, dout, rngs):
        self.l1 = nnx.Linear(din, dh, rngs=rngs); self.l2 = nnx.Linear(dh, dout, rngs=rngs)
    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))

rng = np.random.default_rng(0)
X = rng.normal(size=(1024, 16)).astype(np.float32)
w = rng.normal(size=(16,)).astype(np.float32)
if args.job != "dist":
    print(f"jax {jax.__version__} devices={jax.devices()}", flush=True)

if args.job == "debug-nans":
    jax.config.update("jax_debug_nans", True)
    # Poisson regression on counts; the log-likelihood uses log(rate) of a raw linear output
    y = rng.poisson(np.exp(0.3 * X @ w / 4)).astype(np.float32)
    model = MLP(16, 64, 1, nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)
    @nnx.jit
    def train_step(model, opt, xb, yb):
        def loss_fn(m):
            rate = m(xb)[:, 0]
            return jnp.mean(rate - yb * jnp.log(rate))
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        opt.update(model, grads)
        return loss
    for step in range(args.steps):
        i = (step * 64) % 1024
        loss = train_step(model, opt, X[i:i+64], y[i:i+64])
        if step % 20 == 0:
            print(f"step {step} poisson_nll {float(loss):.4f}", flush=True)

elif args.job == "tracer":
    y = (X @ w > 0).astype(np.int32)
    model = MLP(16, 64, 2, nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    @nnx.jit
    def train_step(model, opt, xb, yb, step):
        def loss_fn(m):
            logits = m(xb)
            return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        # gradient clipping only after warm-up (ported from a PyTorch loop)
        if step > 100:
            grads = jax.tree_util.tree_map(lambda g: jnp.clip(g, -1.0, 1.0), grads)
        opt.update(model, grads)
        return loss
    for step in range(args.steps):
        i = (step * 64) % 1024
        loss = train_step(model, opt, X[i:i+64], y[i:i+64], step)
        if step % 20 == 0:
            print(f"step {step} loss {float(loss):.4f}", flush=True)
elif args.job == "dist":
    # multi-process data-parallel job: every process reads its own shard file each epoch
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=args.coord, num_processes=args.nprocs,
                               process_id=args.proc_id, heartbeat_timeout_seconds=10,
                               initialization_timeout=60)
    from jax.experimental import multihost_utils
    print(f"process {jax.process_index()}/{jax.process_count()} local={jax.local_devices()} global={jax.devices()}", flush=True)
    shard_dir = "/work/rr125/hk/work/jaxshards"
    os.makedirs(shard_dir, exist_ok=True)
    model = MLP(16, 64, 2, nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    @nnx.jit
    def train_step(model, opt, xb, yb):
        def loss_fn(m):
            return optax.softmax_cross_entropy_with_integer_labels(m(xb), yb).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        opt.update(model, grads)
        return loss
    for epoch in range(int(os.environ.get("EPOCHS", "6"))):
        path = os.path.join(shard_dir, f"epoch{epoch}-part{jax.process_index()}.npz")
        if jax.process_index() == 0 or epoch < 3 or os.environ.get("ALL_SHARDS"):
            # the data prep job only wrote part 1 for the first 3 epochs (it ran out of quota)
            yy = (X @ w > 0).astype(np.int32)
            np.savez(path, X=X, y=yy)
        d = np.load(path)
        for step in range(40):
            i = (step * 64) % 1024
            loss = train_step(model, opt, d["X"][i:i+64], d["y"][i:i+64])
        print(f"[proc {jax.process_index()}] epoch {epoch} loss {float(loss):.4f}", flush=True)
        multihost_utils.sync_global_devices(f"end_of_epoch_{epoch}")
else:
    sys.exit("unknown job")
print("done", flush=True)
