"""Keras 3 training (backend from KERAS_BACKEND: torch or jax)."""
import os, sys, argparse
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "labels", "nan", "ckpt-dir", "resume", "resume-arch"])
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--out", default="/work/rr141/jd/work/keras_out")
p.add_argument("--lr", type=float, default=1e-3)
a = p.parse_args()
import numpy as np
import keras
from keras import layers
print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(512, 20)).astype("float32")
y = (x[:, :3].sum(1) > 0).astype("int64") + (x[:, 3] > 1).astype("int64")  # 3 classes
if a.fault == "labels":
    y = y + 1   # labels re-mapped to 1..3 by a preprocessing join, model still has 3 outputs
if a.fault == "nan":
    x[rng.integers(0, 512, 5), 4] = np.inf   # sensor overflow in raw features
width = 64 if a.fault != "resume-arch" else 96
model = keras.Sequential([keras.Input((20,)), layers.Dense(width, activation="relu"), layers.Dense(64, activation="relu"),
                          layers.Dense(3)])
model.compile(optimizer=keras.optimizers.Adam(a.lr), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
cbs = [keras.callbacks.TerminateOnNaN()]
os.makedirs(a.out, exist_ok=True) if a.fault != "ckpt-dir" else None
cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(a.out, "epoch{epoch:02d}.weights.h5"), save_weights_only=True))
if a.fault in ("resume", "resume-arch"):
    model.load_weights(os.path.join(a.out, "last.weights.h5"))
    print("resumed from", os.path.join(a.out, "last.weights.h5"))
hist = model.fit(x, y, epochs=a.epochs, batch_size=32, validation_split=0.2, callbacks=cbs, verbose=2)
model.save_weights(os.path.join(a.out, "last.weights.h5"))
print("final", {k: round(v[-1], 4) for k, v in hist.history.items()})
