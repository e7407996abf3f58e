"""Healthy tf.keras runs that print a lot of alarming-looking TF/Keras warnings."""
import argparse, os, logging, sys
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--mode", default="fit", choices=["fit", "ckpt", "custom"])
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--out", default="out_noise")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger("job")
import tensorflow as tf
import keras
tf.random.set_seed(1)
rng = np.random.default_rng(1)
N, D, C, BS = 600, 12, 3, 32
x = rng.normal(size=(N, D)).astype("float32")
y = (x[:, :3].argmax(1)).astype("int64")

def build(with_aux=True):
    inp = keras.Input(shape=(D,))
    h = keras.layers.Dense(48, activation="relu", name="enc")(inp)
    out = keras.layers.Dense(C, name="head")(h)
    m = keras.Model(inp, out)
    return m

if args.mode == "fit":
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(N).batch(BS)
    steps = N // BS + 1
    model = build()
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    # steps_per_epoch set, but dataset is not repeated -> keras warns "ran out of data"
    model.fit(ds, epochs=args.epochs, steps_per_epoch=steps + 3, verbose=2)
    # python scalars into a tf.function -> retracing warnings
    @tf.function
    def score(batch, temperature):
        return tf.reduce_mean(tf.nn.softmax(model(batch) / temperature, axis=-1)[:, 0])
    for t in [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]:
        log.info("calibration T=%.1f score=%.4f", t, float(score(x[:64], t)))
    os.makedirs(args.out, exist_ok=True)
    model.save(os.path.join(args.out, "model.h5"))
    log.info("eval: %s", model.evaluate(x, y, verbose=0))
    log.info("training finished OK")

elif args.mode == "custom":
    # custom loop with an auxiliary head that is only used at eval -> "Gradients do not exist" warnings
    inp = keras.Input(shape=(D,))
    h = keras.layers.Dense(48, activation="relu", name="enc")(inp)
    out = keras.layers.Dense(C, name="head")(h)
    aux = keras.layers.Dense(1, name="aux_head")(h)
    model = keras.Model(inp, [out, aux])
    opt = keras.optimizers.Adam(1e-3)
    lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BS)
    for ep in range(args.epochs):
        for i, (xb, yb) in enumerate(ds):
            with tf.GradientTape() as tape:
                logits, _ = model(xb, training=True)
                l = lossf(yb, logits)
            grads = tape.gradient(l, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            if i % 6 == 0:
                log.info("epoch %d it %d loss %.4f", ep, i, float(l))
    log.info("done, final loss %.4f", float(l))

elif args.mode == "ckpt":
    os.makedirs(args.out, exist_ok=True)
    model = build()
    opt = keras.optimizers.Adam(1e-3)
    model.compile(opt, keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x, y, batch_size=BS, epochs=1, verbose=2)
    ck = tf.train.Checkpoint(model=model, optimizer=opt, step=tf.Variable(1))
    path = ck.save(os.path.join(args.out, "ckpt"))
    log.info("saved %s", path)
    # fine-tune: restore only the model weights into a fresh model for evaluation, optimizer slots unused
    model2 = build()
    status = tf.train.Checkpoint(model=model2).restore(path)
    log.info("restored weights for eval from %s", path)
    preds = model2.predict(x[:100], verbose=0)
    log.info("eval acc %.3f", float((preds.argmax(1) == y[:100]).mean()))
    del status
    import gc; gc.collect()
    log.info("done")
