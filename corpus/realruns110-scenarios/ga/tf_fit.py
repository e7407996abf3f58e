"""Small tf.keras classifier trained with model.fit; --fault selects a bug."""
import argparse, os, sys, logging, warnings
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "shape", "target", "dtype", "embed", "nan_terminate", "nan_check", "trace"])
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--step", type=int, default=7, help="batch at which bad data appears")
p.add_argument("--verbose", type=int, default=2)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--log", action="store_true", help="python logging with timestamps")
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")
say = log.info if args.log else print

import tensorflow as tf
import keras

tf.random.set_seed(0)
rng = np.random.default_rng(0)
N, D, C, VOCAB, SEQ = 512, 20, 5, 1000, 16
BS = 32

def tabular():
    x = rng.normal(size=(N, D)).astype("float32")
    w = rng.normal(size=(D, C))
    y = np.argmax(x @ w, axis=1).astype("int64")
    return x, y

if args.fault in ("none", "shape", "target", "dtype", "nan_terminate", "nan_check", "trace"):
    x, y = tabular()
    feat_dim = D
    if args.fault == "shape":
        # feature engineering step appended 4 extra columns, but the model config was not updated
        x = np.concatenate([x, x[:, :4] ** 2], axis=1)
    inputs = keras.Input(shape=(feat_dim,), name="features")
    h = keras.layers.Dense(64, activation="relu")(inputs)
    if args.fault == "trace":
        class GatedDense(keras.layers.Layer):
            def __init__(self, units, **kw):
                super().__init__(**kw)
                self.d = keras.layers.Dense(units)
            def call(self, t):
                out = self.d(t)
                # skip the gate when activations are already small (python `if` on a tensor)
                if tf.reduce_mean(tf.abs(out)) > 1.0:
                    out = out * 0.5
                return out
        h = GatedDense(64)(h)
    h = keras.layers.Dense(32, activation="relu")(h)
    outputs = keras.layers.Dense(C, name="logits")(h)
    model = keras.Model(inputs, outputs)
    if args.fault == "target":
        # labels one-hot encoded upstream, loss still sparse
        y = keras.utils.to_categorical(y, C)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    elif args.fault == "dtype":
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    lr = 1e-3
    if args.fault in ("nan_terminate", "nan_check"):
        # price regression head; targets left in dollars (not standardised) and lr from the command line
        y = (x @ rng.normal(size=(D,)) * 5e4 + 2.5e5).astype("float32")
        outputs = keras.layers.Dense(1, name="price")(h)
        model = keras.Model(inputs, outputs)
        loss = "mse"
        lr = args.lr
    opt = keras.optimizers.SGD(learning_rate=lr, momentum=0.9)
    if args.fault == "dtype":
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        # custom training step mixing float64 class weights into the float32 loss
        cw = tf.constant(np.ones(C), dtype=tf.float64)
        @tf.function
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                logits = model(xb, training=True)
                per = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits)
                wts = tf.gather(cw, yb)
                l = tf.reduce_mean(per * wts)
            g = tape.gradient(l, model.trainable_variables)
            opt.apply_gradients(zip(g, model.trainable_variables))
            return l
        for ep in range(args.epochs):
            for i, (xb, yb) in enumerate(ds.batch(BS)):
                l = train_step(xb, yb)
                if i % 4 == 0:
                    say(f"epoch {ep} step {i} loss {float(l):.4f}")
        sys.exit(0)
    if args.fault == "nan_check":
        class Checked(keras.Model):
            def train_step(self, data):
                xb, yb = data
                with tf.GradientTape() as tape:
                    logits = self(xb, training=True)
                    l = self.compute_loss(x=xb, y=yb, y_pred=logits)
                    l = tf.debugging.check_numerics(l, "training loss")
                grads = tape.gradient(l, self.trainable_variables)
                grads = [tf.debugging.check_numerics(g_, f"grad {v.path}") for g_, v in zip(grads, self.trainable_variables)]
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
                for m in self.metrics:
                    if m.name == "loss":
                        m.update_state(l)
                    else:
                        m.update_state(yb, logits)
                return {m.name: m.result() for m in self.metrics}
            def train_step_unused(self): pass
        model = Checked(inputs, outputs)
    model.compile(optimizer=opt, loss=loss, metrics=["mae"] if loss == "mse" else ["accuracy"])
    cbs = []
    if args.fault == "nan_terminate":
        cbs.append(keras.callbacks.TerminateOnNaN())
    say(f"training on {x.shape} labels {y.shape}")
    hist = model.fit(x, y, batch_size=BS, epochs=args.epochs, validation_split=0.1,
                     verbose=args.verbose, callbacks=cbs)
    say(f"final loss {hist.history['loss'][-1]}")
    if args.fault == "nan_terminate":
        say("saving model to out/model_nan.keras")
        os.makedirs("out", exist_ok=True)
        model.save("out/model_nan.keras")
    say("done")

elif args.fault == "embed":
    # token classifier; tokenizer vocab grew to 1200 after adding domain tokens, model still built with 1000
    ids = rng.integers(0, VOCAB, size=(N, SEQ))
    ids[args.step * BS + 5, 3] = 1187
    y = (ids.sum(1) % C).astype("int64")
    model = keras.Sequential([
        keras.Input(shape=(SEQ,), dtype="int32"),
        keras.layers.Embedding(VOCAB, 32),
        keras.layers.GlobalAveragePooling1D(),
        keras.layers.Dense(C),
    ])
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    say(f"vocab={VOCAB} ids max={ids.max()}")
    model.fit(ids, y, batch_size=BS, epochs=args.epochs, verbose=args.verbose, shuffle=False)
    say("done")
