"""Keras 3 classifier on synthetic data (backend from KERAS_BACKEND: jax or torch).

--fault none|esmode|nan|cbkey|ckptext|onehot|rodir
"""
import argparse, os, sys

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--outdir", default="keras_out")
p.add_argument("--verbose", type=int, default=2)
p.add_argument("--init-weights", default=None)
args = p.parse_args()

import numpy as np
import keras
from keras import layers

print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
keras.utils.set_random_seed(0)

N, D, C = 2048, 20, 5
rng = np.random.default_rng(0)
X = rng.normal(size=(N, D)).astype("float32")
W = rng.normal(size=(D, C))
y = np.argmax(X @ W + 0.5 * rng.normal(size=(N, C)), axis=1).astype("int64")
if args.fault == "nan":
    # raw, un-normalised "amount" feature from the export
    X[:, 0] = rng.lognormal(mean=14, sigma=4, size=N)
if args.fault == "onehot":
    y = keras.utils.to_categorical(y, C)

model = keras.Sequential([
    keras.Input((D,)),
    layers.Dense(128, activation="relu"),
    layers.Dense(128, activation="relu"),
    layers.Dense(C),
])
opt = keras.optimizers.SGD(learning_rate=args.lr, momentum=0.9) if args.fault == "nan" \
    else keras.optimizers.Adam(args.lr)
model.compile(optimizer=opt,
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.summary()
if args.init_weights:
    model.load_weights(args.init_weights)
    print("warm start from", args.init_weights)


class LRLogger(keras.callbacks.Callback):
    """Logs the learning rate and reduces it when validation accuracy plateaus."""
    def __init__(self):
        super().__init__()
        self.best = 0.0
    def on_epoch_end(self, epoch, logs=None):
        acc = logs["val_accuracy"]
        if acc <= self.best:
            self.model.optimizer.learning_rate.assign(self.model.optimizer.learning_rate * 0.5)
        self.best = max(self.best, acc)
        print(f"epoch {epoch}: lr={float(self.model.optimizer.learning_rate):.2e} best_val_acc={self.best:.4f}")


os.makedirs(args.outdir, exist_ok=True)
cbs = []
fit_kw = dict(validation_split=0.2)
if args.fault == "nan":
    cbs.append(keras.callbacks.TerminateOnNaN())
if args.fault == "cbkey":
    cbs.append(LRLogger())
    fit_kw = dict(validation_data=None)   # validation moved to a separate eval job
if args.fault == "ckptext":
    cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(args.outdir, "model_{epoch:02d}.h5"),
                                               save_best_only=False))
if args.fault in ("none", "rodir", "esmode"):
    cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(args.outdir, "best.keras"),
                                               monitor="val_accuracy", save_best_only=True, verbose=1))
    cbs.append(keras.callbacks.CSVLogger(os.path.join(args.outdir, "history.csv")))
if args.fault in ("none", "esmode"):
    # early stopping on a metric name from the old config (never logged)
    es_kw = {} if args.fault == "esmode" else {"mode": "max"}
    cbs.append(keras.callbacks.EarlyStopping(monitor="val_acc", patience=2, **es_kw))
    cbs.append(keras.callbacks.ReduceLROnPlateau(monitor="val_los", mode="min", patience=1))

hist = model.fit(X, y, batch_size=64, epochs=args.epochs, callbacks=cbs,
                 verbose=args.verbose, **fit_kw)
print("final:", {k: round(float(v[-1]), 4) for k, v in hist.history.items()})
model.save_weights(os.path.join(args.outdir, "final.weights.h5"))
print("saved", os.path.join(args.outdir, "final.weights.h5"))
