"""Keras 3 classifier trained with fit(); backend chosen by KERAS_BACKEND. Flags select the fault."""
import argparse, os
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "callback_key", "cardinality", "healthy_warn", "monitor_nomode", "lr_sched"])
p.add_argument("--epochs", type=int, default=5)
a = p.parse_args()

import numpy as np
import keras
from keras import layers
print("keras", keras.__version__, "backend", keras.backend.backend(), flush=True)

rng = np.random.default_rng(0)
N = 1200
x = rng.normal(size=(N, 20)).astype("float32")
y = (x[:, :3].sum(1) > 0).astype("int32")
if a.fault == "cardinality":
    # labels come from a separate file that dropped the last shard of rows
    y = y[:1100]

model = keras.Sequential([keras.Input((20,)), layers.Dense(32, activation="relu"), layers.Dropout(0.1),
                          layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])

class LossLogger(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        gap = logs["val_loss"] - logs["loss"]
        print(f"epoch {epoch}: generalisation gap {gap:.4f}", flush=True)

ckdir = "/work/rr145/jr/out/keras_ckpt"
os.makedirs(ckdir, exist_ok=True)
mon = "val_accuracy" if a.fault == "none" else "val_acc"
mkw = {} if a.fault == "monitor_nomode" else {"mode": "max"}
cbs = [keras.callbacks.ModelCheckpoint(os.path.join(ckdir, "best.keras"), monitor=mon, save_best_only=True, **mkw),
       keras.callbacks.EarlyStopping(monitor=mon, patience=2, **mkw)]
kw = dict(epochs=a.epochs, batch_size=64, verbose=2)
if a.fault == "callback_key":
    model.fit(x, y, callbacks=[LossLogger()], **kw)
elif a.fault == "lr_sched":
    def sched(epoch, lr):
        return lr * 0.5 if epoch > 1 else lr
    model.fit(x, y, validation_split=0.2, callbacks=[keras.callbacks.LearningRateScheduler(sched, verbose=1)], **kw)
else:
    model.fit(x, y, validation_split=0.2, callbacks=cbs, **kw)
print("final eval:", model.evaluate(x[:200], y[:200], verbose=0), flush=True)
