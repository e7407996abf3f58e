"""Train / checkpoint / resume / export a small tf.keras model. --phase selects what the run does."""
import argparse, os, sys, logging
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--phase", required=True, choices=["train", "resume", "eval", "export", "tfckpt-train", "tfckpt-resume"])
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--weights", default=None)
p.add_argument("--model-file", default=None)
p.add_argument("--export-dir", default="export/serving")
p.add_argument("--wide", type=int, default=0, help="extra width to make checkpoints bigger")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s ckpt: %(message)s")
log = logging.getLogger()
import tensorflow as tf
import keras
rng = np.random.default_rng(5)
D, C = 16, 4
x = rng.normal(size=(640, D)).astype("float32")
y = x[:, :C].argmax(1).astype("int64")

@keras.saving.register_keras_serializable(package="proj") if os.environ.get("REGISTER_SCALE", "1") == "1" else (lambda c: c)
class LearnedScale(keras.layers.Layer):
    def build(self, shape):
        self.s = self.add_weight(shape=(shape[-1],), initializer="ones", name="scale")
    def call(self, t):
        return t * self.s

def build(hidden, use_custom=False):
    inp = keras.Input(shape=(D,), name="x")
    h = keras.layers.Dense(hidden, activation="relu", name="enc")(inp)
    if args.wide:
        h = keras.layers.Dense(args.wide, activation="relu", name="wide")(h)
    if use_custom:
        h = LearnedScale(name="scale")(h)
    out = keras.layers.Dense(C, name="head")(h)
    return keras.Model(inp, out)

def compile_(m):
    m.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])

if args.phase == "train":
    m = build(args.hidden, use_custom=True); compile_(m)
    os.makedirs(args.ckpt_dir, exist_ok=True) if os.access(os.path.dirname(os.path.abspath(args.ckpt_dir)), os.W_OK) else None
    cb = [keras.callbacks.ModelCheckpoint(os.path.join(args.ckpt_dir, "epoch{epoch:02d}.weights.h5"), save_weights_only=True),
          keras.callbacks.ModelCheckpoint(os.path.join(args.ckpt_dir, "best.keras"), monitor="val_accuracy", save_best_only=True)]
    m.fit(x, y, batch_size=32, epochs=args.epochs, validation_split=0.2, verbose=2, callbacks=cb)
    log.info("training done; checkpoints in %s: %s", args.ckpt_dir, sorted(os.listdir(args.ckpt_dir)))

elif args.phase == "resume":
    m = build(args.hidden, use_custom=True); compile_(m)
    w = args.weights or os.path.join(args.ckpt_dir, f"epoch{args.epochs:02d}.weights.h5")
    log.info("resuming from %s (%s bytes, hidden=%d)", w, os.path.getsize(w) if os.path.exists(w) else "missing", args.hidden)
    m.load_weights(w)
    m.fit(x, y, batch_size=32, epochs=args.epochs + 2, initial_epoch=args.epochs, verbose=2)
    log.info("resume done")

elif args.phase == "eval":
    f = args.model_file or os.path.join(args.ckpt_dir, "best.keras")
    log.info("loading %s for evaluation", f)
    m = keras.models.load_model(f)
    log.info("eval: %s", m.evaluate(x, y, verbose=0, return_dict=True))

elif args.phase == "export":
    m = build(args.hidden); compile_(m)
    m.fit(x, y, batch_size=32, epochs=args.epochs, verbose=2)
    # serving signature maps raw class ids to label strings through a lookup table
    keys = tf.constant([0, 1, 2, 3], dtype=tf.int64)
    vals = tf.constant(["cat", "dog", "bird", "fish"])
    def make_serving(model):
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, vals), default_value="unk")
        @tf.function(input_signature=[tf.TensorSpec([None, D], tf.float32)])
        def serve(batch):
            ids = tf.argmax(model(batch, training=False), axis=-1)
            return {"label": table.lookup(ids), "class_id": ids}
        return serve
    serve = make_serving(m)
    log.info("smoke test serving fn: %s", serve(x[:3])["label"].numpy())
    log.info("exporting SavedModel to %s", args.export_dir)
    tf.saved_model.save(m, args.export_dir, signatures={"serving_default": serve})
    log.info("export done")

elif args.phase in ("tfckpt-train", "tfckpt-resume"):
    m = build(args.hidden); compile_(m)
    opt = m.optimizer
    step = tf.Variable(0, dtype=tf.int64)
    ck = tf.train.Checkpoint(model=m, optimizer=opt, step=step)
    mgr = tf.train.CheckpointManager(ck, args.ckpt_dir, max_to_keep=3)
    if args.phase == "tfckpt-resume":
        log.info("latest checkpoint: %s", mgr.latest_checkpoint)
        ck.restore(mgr.latest_checkpoint).assert_existing_objects_matched()
        log.info("restored step=%d", int(step))
    for ep in range(args.epochs):
        h = m.fit(x, y, batch_size=32, epochs=1, verbose=0)
        step.assign_add(1)
        path = mgr.save(checkpoint_number=int(step))
        log.info("epoch %d loss %.4f saved %s", int(step), h.history["loss"][-1], path)
    log.info("done")
