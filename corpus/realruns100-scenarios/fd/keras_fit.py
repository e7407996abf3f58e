"""Tiny Keras 3 model.fit run (KERAS_BACKEND from env); --fault selects a problem."""
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--epochs", type=int, default=4)
args = p.parse_args()
import numpy as np
import keras
from keras import layers

rng = np.random.default_rng(0)
x = rng.normal(size=(2048, 32)).astype("float32")
W = rng.normal(size=(32, 10)).astype("float32")
y = (x @ W).argmax(-1)
if args.fault == "spike":
    x[900:964] *= 25.0   # a block of unscaled rows in the middle of the epoch

model = keras.Sequential([
    layers.Dense(64, activation="relu", input_shape=(32,)),
    layers.Dense(64, activation="relu"),
    layers.Dense(10, activation="softmax"),
])
loss = "categorical_crossentropy" if args.fault == "onehot_loss" else "sparse_categorical_crossentropy"
opt = keras.optimizers.SGD(learning_rate=args.lr, momentum=0.9) if args.fault == "nan" else keras.optimizers.Adam(args.lr)
model.compile(optimizer=opt, loss=loss, metrics=["accuracy"])
model.summary()
cbs = [keras.callbacks.TerminateOnNaN()]
hist = model.fit(x, y, batch_size=32, epochs=args.epochs, validation_split=0.1, callbacks=cbs, verbose=2 if args.fault != "spike" else 1)
print("final loss:", hist.history["loss"][-1])
