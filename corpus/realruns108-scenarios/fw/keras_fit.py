"""Keras 3 model.fit on synthetic tabular data (backend from KERAS_BACKEND: jax or torch).

--fault:
  none         healthy
  onehot-int   categorical_crossentropy with integer class ids
  label-range  class ids 1..10 with a 10-way softmax (off by one)
  loss-key     two-output model, loss dict keyed by a wrong output name
  loss-output  two-output model, losses given as a list in the wrong order
  nan          a few feature rows with missing values (NaN) + TerminateOnNaN
  diverge      lr too high for SGD+momentum, loss grows but stays finite
  wt-shape     load .weights.h5 written by a model with another hidden size
  wt-trunc     load a .weights.h5 that was cut short by a copy
  wt-missing   resume from a weights path that was never written
  ckpt-dir     ModelCheckpoint into --ckpt-dir (every epoch)
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--weights", default="")
p.add_argument("--save-weights", default="")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--verbose", type=int, default=1)
p.add_argument("--n", type=int, default=2048)
args = p.parse_args()

import numpy as np
import keras
from keras import layers

print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
keras.utils.set_random_seed(0)

FEAT, CLASSES = 20, 10
rng = np.random.default_rng(0)
W = rng.normal(size=(FEAT, CLASSES))
x = rng.normal(size=(args.n, FEAT)).astype("float32")
y = (x @ W).argmax(-1).astype("int64")
aux = (x[:, :3].sum(-1, keepdims=True) > 0).astype("float32")
if args.fault == "label-range":
    y = y + 1  # classes exported 1-based by the labelling tool


def build(hidden, two_heads=False):
    inp = keras.Input(shape=(FEAT,), name="features")
    h = layers.Dense(hidden, activation="relu", name="dense_in")(inp)
    h = layers.Dense(hidden, activation="relu", name="dense_mid")(h)
    cls = layers.Dense(CLASSES, activation="softmax", name="cls")(h)
    if not two_heads:
        return keras.Model(inp, cls, name="tabnet")
    flag = layers.Dense(1, activation="sigmoid", name="flag")(h)
    return keras.Model(inp, [cls, flag], name="tabnet2")


two = args.fault in ("loss-key", "loss-output")
model = build(args.hidden, two)

opt = keras.optimizers.Adam(args.lr)
if args.fault == "diverge":
    opt = keras.optimizers.SGD(args.lr, momentum=0.99)
if args.fault == "onehot-int":
    model.compile(opt, loss="categorical_crossentropy", metrics=["accuracy"])
elif args.fault == "loss-key":
    model.compile(opt, loss={"cls": "sparse_categorical_crossentropy",
                             "is_flag": "binary_crossentropy"},
                  metrics={"cls": ["accuracy"]})
elif args.fault == "loss-output":
    model.compile(opt, loss=["binary_crossentropy", "sparse_categorical_crossentropy"])
elif two:
    model.compile(opt, loss=["sparse_categorical_crossentropy", "binary_crossentropy"])
else:
    model.compile(opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])

if args.weights:
    print(f"restoring weights from {args.weights}", flush=True)
    model.load_weights(args.weights)

cbs = []
if args.fault == "nan":
    cbs.append(keras.callbacks.TerminateOnNaN())
if args.ckpt_dir:
    cbs.append(keras.callbacks.ModelCheckpoint(
        os.path.join(args.ckpt_dir, "epoch{epoch:02d}.weights.h5"), save_weights_only=True))

ys = [y, aux] if two else y
if args.fault == "nan":
    # rows from the late sensor export: missing readings left as NaN
    x[1200:1206, 7] = np.nan
hist = model.fit(x, ys, batch_size=32, epochs=args.epochs, validation_split=0.1,
                 callbacks=cbs, verbose=args.verbose)
print("final:", {k: round(float(v[-1]), 4) for k, v in hist.history.items()}, flush=True)
if args.save_weights:
    model.save_weights(args.save_weights)
    print(f"saved weights to {args.save_weights}", flush=True)
print("done", flush=True)
