"""Keras 3 tiny classifier; backend from KERAS_BACKEND; optional torch.distributed per-rank fit."""
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--ckpt-dir", default="/work/rr135/il/tmp/keras_ckpt")
a = p.parse_args()
import numpy as np
import keras
from keras import layers

rank = int(os.environ.get("RANK", "0")); world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
print(f"[rank {rank}] keras {keras.__version__} backend={keras.backend.backend()} world={world}", flush=True)
keras.utils.set_random_seed(rank)
NCLS = 5
rng = np.random.default_rng(rank)
x = rng.normal(size=(2048, 20)).astype("float32")
y = (x[:, :NCLS].argmax(1)).astype("int64")
if a.fault in ("onehot_mismatch",):
    # labels one-hot encoded from the raw class ids
    y = keras.utils.to_categorical(y, NCLS)
    y = y[:, 1:]  # drop "background" column (dataset v1 convention)
first = [layers.Dense(64, activation="relu", input_shape=(20,))] if a.fault in ("legacy_input_shape", "earlystop_val_acc") else [keras.Input((20,)), layers.Dense(64, activation="relu")]
model = keras.Sequential(first + [
                          layers.Dropout(0.1), layers.Dense(64, activation="relu"), layers.Dense(NCLS)])
loss = "categorical_crossentropy" if a.fault == "onehot_mismatch" else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, metrics=["accuracy"])
cbs = []
ckdir = os.path.join(a.ckpt_dir, f"rank{rank}")
os.makedirs(ckdir, exist_ok=True)
cbs.append(keras.callbacks.ModelCheckpoint(os.path.join(ckdir, "epoch{epoch:02d}.weights.h5"), save_weights_only=True))
cbs.append(keras.callbacks.CSVLogger(os.path.join(ckdir, "history.csv")))
verbose = 2 if world > 1 else 1
if a.fault in ("earlystop_val_acc",):
    cbs.append(keras.callbacks.EarlyStopping(monitor="val_acc", patience=2))  # old metric name from TF1 scripts
hist = model.fit(x, y, batch_size=64, epochs=a.epochs, validation_split=0.1, callbacks=cbs, verbose=verbose)
acc = hist.history["val_accuracy"][-1]
if world > 1:
    import torch
    t = torch.tensor([acc]); dist.all_reduce(t); acc = t.item() / world
    dist.destroy_process_group()
print(f"[rank {rank}] done, mean val_accuracy={acc:.4f}", flush=True)
