"""Keras 3 tiny classifier; backend via KERAS_BACKEND; --fault selects failure."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "onehot", "nan", "ckpt_ext", "ckpt_ro", "oldapi"])
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--outdir", default="/tmp/rr132id_keras_out")
p.add_argument("--lr", type=float, default=1e-3)
a = p.parse_args()
import numpy as np
import keras
from keras import layers
print(f"keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
rng = np.random.default_rng(0)
X = rng.normal(size=(2048, 20)).astype("float32")
y = (X[:, :5].sum(1) > 0).astype("int64") + (X[:, 5] > 1).astype("int64")  # 3 classes
n_classes = 3
if a.fault == "nan":
    X[1337, 3] = np.inf   # division by a zero "days active" in the feature pipeline
inputs = keras.Input(shape=(20,))
x = layers.Dense(64, activation="relu")(inputs)
x = layers.Dropout(0.1)(x)
x = layers.Dense(64, activation="relu")(x)
if a.fault == "oldapi":
    x = layers.Dense(32, activation="relu", input_dim=64)(x)
outputs = layers.Dense(n_classes, activation="softmax")(x)
model = keras.Model(inputs, outputs)
loss = "categorical_crossentropy" if a.fault == "onehot" else "sparse_categorical_crossentropy"
model.compile(optimizer=keras.optimizers.Adam(a.lr), loss=loss, metrics=["accuracy"])
cbs = [keras.callbacks.TerminateOnNaN()]
if a.fault == "ckpt_ext":
    cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(a.outdir, "ckpt-{epoch:02d}.h5"), save_best_only=True))
elif a.fault in ("ckpt_ro", "none", "oldapi"):
    if a.fault != "ckpt_ro": os.makedirs(a.outdir, exist_ok=True)
    cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(a.outdir, "ckpt-{epoch:02d}.keras")))
    cbs.append(keras.callbacks.CSVLogger(os.path.join(a.outdir, "history.csv")))
hist = model.fit(X, y, validation_split=0.2, epochs=a.epochs, batch_size=64, callbacks=cbs, verbose=2)
print("final:", {k: round(v[-1], 4) for k, v in hist.history.items()})
