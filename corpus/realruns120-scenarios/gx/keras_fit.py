"""Keras 3 model.fit() on a synthetic classification task (backend chosen by KERAS_BACKEND).

  --fault none|lr|onehot|generator|slow
"""
import argparse
import os
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--out-dir", default="out/keras")
args = p.parse_args()

import keras
from keras import layers

print(f"keras {keras.__version__}, backend={keras.backend.backend()}", flush=True)
rng = np.random.default_rng(1)
N, D, C = 4096, 32, 5
X = rng.normal(size=(N, D)).astype("float32")
W = rng.normal(size=(D, C))
y = (X @ W).argmax(1)

if args.fault == "lr":
    # raw (unnormalised) sensor values with large magnitude
    X = X * 1e3

model = keras.Sequential([
    layers.Dense(128, activation="relu", input_shape=(D,)),
    layers.Dense(64, activation="relu"),
    layers.Dense(C, activation="softmax") if args.fault != "lr" else layers.Dense(1),
])
loss = "sparse_categorical_crossentropy"
if args.fault == "lr":
    # demand forecasting head: regress the raw total
    loss = "mse"
    y = X.sum(1, keepdims=True)
if args.fault == "onehot":
    # switched loss to the one-hot variant but labels are still integer class ids
    loss = "categorical_crossentropy"
model.compile(optimizer=keras.optimizers.SGD(learning_rate=args.lr, momentum=0.9),
              loss=loss, metrics=["accuracy"] if args.fault != "lr" else ["mae"])
model.summary()

os.makedirs(args.out_dir, exist_ok=True)
cbs = [keras.callbacks.TerminateOnNaN(),
       keras.callbacks.ModelCheckpoint(os.path.join(args.out_dir, "best.keras"), save_best_only=True,
                                       monitor="val_loss", verbose=1)]

if args.fault == "generator":
    def gen():
        # finite generator: one pass over the data
        for i in range(0, int(N * 0.8), 64):
            yield X[i:i + 64], y[i:i + 64]
    hist = model.fit(gen(), steps_per_epoch=60, epochs=args.epochs, callbacks=cbs[:1], verbose=2)
else:
    if args.fault == "slow":
        class Slow(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                time.sleep(0.05)
        cbs.append(Slow())
    hist = model.fit(X, y, validation_split=0.2, batch_size=64, epochs=args.epochs, callbacks=cbs,
                     verbose=1 if args.fault != "lr" else 2)
print("final loss", hist.history["loss"][-1] if hist.history.get("loss") else None)
model.save(os.path.join(args.out_dir, "final.keras"))
print("saved", os.path.join(args.out_dir, "final.keras"))
