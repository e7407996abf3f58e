import argparse, os, sys, time, logging
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--proc-id", type=int, default=0)
p.add_argument("--nprocs", type=int, default=1)
p.add_argument("--fail-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--port", type=int, default=48610)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--step-sleep", type=float, default=0.0)
a = p.parse_args()
import jax, jax.numpy as jnp, numpy as np, optax
import flax.linen as nn
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [proc %(process)d] %(message)s")
log = logging.getLogger("train")
if a.nprocs > 1:
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{a.port}", num_processes=a.nprocs, process_id=a.proc_id)
    log.info("jax.distributed up: process_index=%d process_count=%d devices=%s", jax.process_index(), jax.process_count(), jax.devices())

class MLP(nn.Module):
    hidden: int = 32
    out: int = 4
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(self.out)(x)

rng = np.random.default_rng(a.proc_id)
feat = 16
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.ones((1, feat)))
opt = optax.adam(a.lr)
state = opt.init(params)

def loss_fn(p, x, y):
    logits = model.apply(p, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

@jax.jit
def step(p, s, x, y):
    l, g = jax.value_and_grad(loss_fn)(p, x, y)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l

W = rng.normal(size=(feat, 4))
for i in range(a.steps):
    bs = 32
    x = rng.normal(size=(bs, feat)).astype(np.float32)
    if a.fault == "nan" :
        x = x * 1e3
    if a.fault == "unscaled" and i >= a.fail_step:
        x[rng.integers(0, bs), 3] = np.nan  # new shard has missing values, imputation skipped
    y = (x @ W).argmax(-1)
    if a.fault == "shape" and i == a.fail_step:
        # bug: concatenating the extra feature column added by the new preprocessing
        x = np.concatenate([x, np.ones((bs, 1), np.float32)], axis=1)
    if a.fault == "oom" and i == a.fail_step:
        big = jnp.zeros((int(4e9),), jnp.float32)  # eval buffer sized from full dataset
        big.block_until_ready()
    if a.fault == "die" and i == a.fail_step and a.proc_id == 1:
        log.info("step %d: loading next shard", i)
        os.kill(os.getpid(), 9)
    params, state, l = step(params, state, jnp.asarray(x), jnp.asarray(y))
    log.info("step %d loss %.4f", i, float(l))
    if a.nprocs > 1 or a.step_sleep:
        time.sleep(a.step_sleep or 0.5)
log.info("done")
