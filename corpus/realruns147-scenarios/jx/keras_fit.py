"""Keras 3 classifier trained with model.fit (backend from KERAS_BACKEND: jax or torch).
--fault {none,onehot,width,lr}; --ckpt DIR writes ModelCheckpoint files there."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--fault", default="none")
p.add_argument("--ckpt", default=None)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--steps-per-epoch", type=int, default=None)
p.add_argument("--verbose", type=int, default=2)
a = p.parse_args()
import numpy as np
import keras
from keras import layers
print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
rng = np.random.default_rng(0)
N, D, C = 2048, 20, 5
X = rng.normal(size=(N, D)).astype("float32")
W = rng.normal(size=(D, C))
y = np.argmax(X @ W, axis=1)
if a.fault == "lr":
    X = X * 1000.0
Xv, yv = X[:256], y[:256]
if a.fault == "onehot":
    y = keras.utils.to_categorical(y, C)
    yv = keras.utils.to_categorical(yv, C)
in_dim = D if a.fault != "width" else 24
model = keras.Sequential([
    layers.Input(shape=(in_dim,)),
    layers.Dense(64, activation="relu"),
    layers.Dropout(0.1),
    layers.Dense(64, activation="relu"),
    layers.Dense(C),
])
opt = keras.optimizers.SGD(learning_rate=a.lr, momentum=0.9) if a.fault == "lr" else keras.optimizers.Adam(a.lr)
model.compile(optimizer=opt,
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
model.summary()
cbs = [keras.callbacks.TerminateOnNaN(), keras.callbacks.EarlyStopping(patience=3, restore_best_weights=True)]
if a.ckpt:
    cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(a.ckpt, "epoch{epoch:02d}-{val_loss:.3f}.keras")))
hist = model.fit(X, y, validation_data=(Xv, yv), epochs=a.epochs, batch_size=64,
                 steps_per_epoch=a.steps_per_epoch, callbacks=cbs, verbose=a.verbose)
print("final:", {k: round(float(v[-1]), 4) for k, v in hist.history.items()})
res = model.evaluate(Xv, yv, verbose=0)
print("eval:", res)
