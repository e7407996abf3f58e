"""Keras count regression (Poisson-style negative log-likelihood written by hand).

--fault relu_log  output layer uses relu and the loss takes log(y_pred) (no epsilon)
--fault none      softplus output
"""
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import numpy as np
import keras
from keras import ops

p = argparse.ArgumentParser()
p.add_argument("--fault", default="relu_log", choices=["none", "relu_log"])
p.add_argument("--epochs", type=int, default=5)
args = p.parse_args()

rng = np.random.default_rng(0)
X = rng.normal(size=(2048, 10)).astype("float32")
rate = np.exp(X[:, :3].sum(1) * 0.3)
y = rng.poisson(rate).astype("float32")[:, None]


def poisson_nll(y_true, y_pred):
    return ops.mean(y_pred - y_true * ops.log(y_pred))


act = "relu" if args.fault == "relu_log" else "softplus"
model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(1, activation=act, bias_initializer=keras.initializers.Constant(3.0))])
model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=poisson_nll)
model.fit(X, y, batch_size=64, epochs=args.epochs, validation_split=0.1,
          callbacks=[keras.callbacks.TerminateOnNaN()], verbose=2)
print("training ended")
