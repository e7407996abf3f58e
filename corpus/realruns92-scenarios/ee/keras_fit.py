"""Keras 3 model.fit on a small tabular dataset written to .npz (backend from KERAS_BACKEND).

--data   path of the npz (created by --make-data with optional defects)
--defect {none,nan_rows,extra_col,labels_1based}  problem baked into the generated data file
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr92/ee/data/tab.npz")
p.add_argument("--make-data", action="store_true")
p.add_argument("--defect", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--classes", type=int, default=5)
p.add_argument("--legacy-input", action="store_true", help="old-style Dense(input_shape=...)")
p.add_argument("--verbose", type=int, default=2)
args = p.parse_args()

import numpy as np

if args.make_data:
    rng = np.random.default_rng(3)
    n, d = 2000, 20
    x = rng.normal(size=(n, d)).astype("float32")
    y = (x[:, :args.classes] * 1.5 + rng.normal(size=(n, args.classes))).argmax(-1)
    if args.defect == "nan_rows":
        # sensor dropouts exported as NaN in a block of rows near the end of the file
        x[1500:1540, 3] = np.nan
    if args.defect == "extra_col":
        x = np.concatenate([x, rng.normal(size=(n, 4)).astype("float32")], 1)
    if args.defect == "labels_1based":
        y = y + 1
    os.makedirs(os.path.dirname(args.data), exist_ok=True)
    np.savez(args.data, x=x, y=y)
    print(f"wrote {args.data}: x{x.shape} y{y.shape} classes {sorted(set(y.tolist()))}")
    sys.exit(0)

import keras
from keras import layers

print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
d = np.load(args.data)
x, y = d["x"], d["y"]
print(f"loaded {args.data}: x{x.shape} y{y.shape}", flush=True)
split = int(0.8 * len(x))

if args.legacy_input:
    model = keras.Sequential([
        layers.Dense(64, activation="relu", input_shape=(20,)),
        layers.Dropout(0.1),
        layers.Dense(64, activation="relu"),
        layers.Dense(args.classes, activation="softmax"),
    ])
else:
    model = keras.Sequential([
        keras.Input(shape=(20,)),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.1),
        layers.Dense(64, activation="relu"),
        layers.Dense(args.classes, activation="softmax"),
    ])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.summary()
hist = model.fit(x[:split], y[:split], validation_data=(x[split:], y[split:]),
                 epochs=args.epochs, batch_size=32, shuffle=False, verbose=args.verbose,
                 callbacks=[keras.callbacks.TerminateOnNaN()])
print("final:", {k: round(v[-1], 4) for k, v in hist.history.items()})
os.makedirs("/work/rr92/ee/out", exist_ok=True)
model.save("/work/rr92/ee/out/keras_model.keras")
print("saved /work/rr92/ee/out/keras_model.keras")
