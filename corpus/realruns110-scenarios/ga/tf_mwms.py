"""tf.distribute.MultiWorkerMirroredStrategy training with N local workers (TF_CONFIG built from --ports/--index)."""
import argparse, json, os, sys, time, logging
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--index", type=int, required=True)
p.add_argument("--ports", default="43910,43911")
p.add_argument("--fault", default="none", choices=["none", "shape", "missing_shard", "eval_oom"])
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-epoch", type=int, default=1)
p.add_argument("--tta", type=int, default=4)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--data", default="mw_data")
p.add_argument("--log-every", type=int, default=4)
p.add_argument("--steps-per-epoch", type=int, default=0)
p.add_argument("--fit", action="store_true", help="use model.fit instead of a custom loop")
args = p.parse_args()
ports = args.ports.split(",")
os.environ["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"localhost:{q}" for q in ports]},
                                      "task": {"type": "worker", "index": args.index}})
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s worker{args.index}: %(message)s")
log = logging.getLogger("mw")
import tensorflow as tf
import keras
D, C, N = 16, 4, 1024
me = args.index
bad = args.fault != "none" and me == args.fail_rank

def load_shard():
    # each worker reads its own shard file (written by the data-prep step)
    fn = os.path.join(args.data, f"part-{me:02d}.npz")
    if args.fault == "missing_shard" and bad:
        fn = os.path.join(args.data, f"part-{me:02d}-v2.npz")   # manifest points at a re-exported shard name
    log.info("loading shard %s", fn)
    with open(fn, "rb") as f:
        z = np.load(f)
        return z["x"], z["y"]

if me == 0 and not os.path.exists(os.path.join(args.data, "part-00.npz")):
    pass
strategy = tf.distribute.MultiWorkerMirroredStrategy()
log.info("strategy ready: %d replicas in sync", strategy.num_replicas_in_sync)
x, y = load_shard()
if args.fault == "shape" and bad:
    # this worker's shard was exported with the extra 'hour' one-hot columns
    x = np.concatenate([x, np.zeros((len(x), 8), "float32")], axis=1)
GLOBAL_BS = 64
with strategy.scope():
    model = keras.Sequential([keras.Input(shape=(D,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(64, activation="relu"), keras.layers.Dense(C)])
    opt = keras.optimizers.Adam(1e-3)
    if args.fit:
        model.compile(opt, keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
if args.fit:
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=me).batch(GLOBAL_BS // strategy.num_replicas_in_sync)
    opts = tf.data.Options(); opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    model.fit(ds.with_options(opts), epochs=args.epochs, verbose=2 if me == 0 else 0)
    log.info("fit finished")
    sys.exit(0)
lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
def dataset_fn(ctx):
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(512, seed=me).repeat()
    return ds.batch(ctx.get_per_replica_batch_size(GLOBAL_BS))
dist = iter(strategy.distribute_datasets_from_function(dataset_fn))
@tf.function
def train_step(it):
    def step(xb, yb):
        with tf.GradientTape() as tape:
            per = lossf(yb, model(xb, training=True))
            l = tf.nn.compute_average_loss(per, global_batch_size=GLOBAL_BS)
        g = tape.gradient(l, model.trainable_variables)
        opt.apply_gradients(zip(g, model.trainable_variables))
        return l
    xb, yb = next(it)
    per_rep = strategy.run(step, args=(xb, yb))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_rep, axis=None)
steps = args.steps_per_epoch or N // GLOBAL_BS
for ep in range(args.epochs):
    t0 = time.time()
    for s in range(steps):
        l = train_step(dist)
        if s % args.log_every == 0:
            log.info("epoch %d step %d/%d loss %.4f", ep, s, steps, float(l))
    log.info("epoch %d done in %.2fs", ep, time.time() - t0)
    if me == 0:
        # chief: validation with test-time augmentation (noise copies), scored in one forward pass
        reps = args.tta if not (args.fault == "eval_oom" and ep == args.fail_epoch) else args.tta * 20000
        xv = tf.tile(tf.constant(x[:256]), [reps, 1])
        xv = xv + tf.random.normal(tf.shape(xv), stddev=0.05)
        logits = model(xv, training=False)
        acc = tf.reduce_mean(tf.cast(tf.argmax(logits, -1) == tf.tile(tf.constant(y[:256]), [reps]), tf.float32))
        log.info("chief validation (tta=%d, %d rows): acc %.4f", reps, int(xv.shape[0]), float(acc))
log.info("training finished")
