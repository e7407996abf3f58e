"""Keras 3 training (backend from KERAS_BACKEND: jax or torch).

--mode fit    : model.fit with callbacks (single process)
--mode ddp    : custom train_step on the torch backend, gradients averaged with torch.distributed (gloo),
                launched by torchrun
--fault:
  none        healthy (fit mode: callbacks with alarming warnings)
  target      labels kept as integer class ids while the loss is categorical_crossentropy
  input       feature pipeline adds 4 features but the model Input is still 16 wide
  vocab       (ddp) each rank builds its token vocabulary from its own shard -> embedding sizes differ
  labels      (fit) one label file has id 10 for a 10-class head (sparse CE)
"""
import argparse
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--mode", default="fit")
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--rank-fault", type=int, default=1)
args = p.parse_args()

import numpy as np
import keras
from keras import layers

NCLS, FEAT = 10, 16


def fit_mode():
    rng = np.random.default_rng(0)
    n = 2048
    feat = FEAT + 4 if args.fault == "input" else FEAT
    x = rng.normal(size=(n, feat)).astype("float32")
    w = rng.normal(size=(feat, NCLS))
    y = np.argmax(x @ w, axis=-1)
    xv, yv = x[:256], y[:256]
    model = keras.Sequential([
        keras.Input(shape=(FEAT,)),
        layers.Dense(64, activation="relu"),
        layers.Dropout(0.1),
        layers.Dense(64, activation="relu"),
        layers.Dense(NCLS, activation="softmax"),
    ])
    if args.fault == "target":
        loss = "categorical_crossentropy"
    else:
        loss = "sparse_categorical_crossentropy"
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=loss, metrics=["accuracy"])
    model.summary()
    cbs = [keras.callbacks.ModelCheckpoint("/work/rr97/et/tmp/keras_best.keras", monitor="val_loss",
                                           save_best_only=True),
           keras.callbacks.ReduceLROnPlateau(monitor="val_los" if args.fault == "monitor-typo" else "val_loss", patience=1)]
    if args.fault == "none":
        # warm-up helper that everyone copies: EarlyStopping on a metric name from the TF2 days
        cbs.append(keras.callbacks.EarlyStopping(monitor="val_acc", mode="max", patience=3))
        cbs.append(keras.callbacks.CSVLogger("/work/rr97/et/tmp/keras_log.csv"))
    model.fit(x, y, batch_size=64, epochs=args.epochs, validation_data=(xv, yv), callbacks=cbs, verbose=2)
    print("final eval:", model.evaluate(xv, yv, verbose=0))


def ddp_mode():
    import torch
    import torch.distributed as dist
    from datetime import timedelta
    assert keras.backend.backend() == "torch"
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    # tiny "text" task: bag of token ids -> class
    corpus = [" ".join(f"w{rng.integers(0, 50 + (7 if (args.fault == 'vocab' and rank == args.rank_fault) else 0))}"
                       for _ in range(12)) for _ in range(512)]
    if args.fault == "vocab":
        vocab = sorted({t for s in corpus for t in s.split()})  # built per shard
    else:
        vocab = [f"w{i}" for i in range(57)]
    idx = {t: i + 1 for i, t in enumerate(vocab)}
    ids = np.array([[idx[t] for t in s.split()] for s in corpus], dtype="int32")
    y = (ids.sum(1) % 4).astype("int32")
    print(f"[rank {rank}] vocab size {len(vocab) + 1}, {len(corpus)} samples", flush=True)

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(12,), dtype="int32"),
                              layers.Embedding(len(vocab) + 1, 32),
                              layers.GlobalAveragePooling1D(),
                              layers.Dense(32, activation="relu"),
                              layers.Dense(4)])
    opt = keras.optimizers.Adam(1e-3)
    lossf = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt.build(model.trainable_variables)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        b = rng.integers(0, len(corpus), 32)
        xb, yb = torch.as_tensor(ids[b]), torch.as_tensor(y[b])
        model.zero_grad()
        loss = lossf(yb, model(xb, training=True))
        loss.backward()
        grads = [v.value.grad for v in model.trainable_variables]
        for g in grads:
            dist.all_reduce(g)
            g /= world
        with torch.no_grad():
            opt.apply(grads, model.trainable_variables)
        if step % 10 == 0 or step == 1:
            print(f"[rank {rank}] step {step} loss {loss.item():.4f} ({time.time()-t0:.1f}s)", flush=True)
    dist.destroy_process_group()
    print(f"[rank {rank}] finished", flush=True)


def custom_mode():
    """Subclassed keras.Model with a custom train_step (torch backend), per-feature normalisation
    statistics computed with numpy and applied inside train_step."""
    import torch
    assert keras.backend.backend() == "torch"
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2048, FEAT)) * 5 + 3).astype("float32")
    y = np.argmax(x @ rng.normal(size=(FEAT, NCLS)), -1)
    mean, std = x.mean(0), x.std(0)          # numpy reductions of float32 data
    if args.fault == "dtype":
        mean, std = np.mean(x, 0, dtype=np.float64), np.std(x, 0, dtype=np.float64)  # "more precise" stats

    class Clf(keras.Model):
        def __init__(self):
            super().__init__()
            self.h = layers.Dense(64, activation="relu")
            self.o = layers.Dense(NCLS)
            self.mu = torch.from_numpy(mean)
            self.sd = torch.from_numpy(std)
            self.loss_tracker = keras.metrics.Mean(name="loss")

        def call(self, xb, training=False):
            return self.o(self.h(xb))

        def train_step(self, data):
            xb, yb = data
            xb = (xb - self.mu) / self.sd
            self.zero_grad()
            logits = self(xb, training=True)
            loss = self.compute_loss(x=xb, y=yb, y_pred=logits)
            loss.backward()
            grads = [v.value.grad for v in self.trainable_weights]
            with torch.no_grad():
                self.optimizer.apply(grads, self.trainable_weights)
            self.loss_tracker.update_state(loss)
            return {"loss": self.loss_tracker.result()}

    m = Clf()
    m.compile(optimizer=keras.optimizers.AdamW(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(x, y, batch_size=128, epochs=args.epochs, verbose=1)
    print("done")


if args.mode == "custom":
    custom_mode()
elif args.mode == "fit":
    fit_mode()
else:
    ddp_mode()
