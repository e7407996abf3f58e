"""Keras 3 fit() on a small synthetic classification task (JAX or torch backend via KERAS_BACKEND).

--fault: none | target-shape | callback-key | ran-out | load-mismatch
--spawn N: run N workers with torch.multiprocessing.spawn (torch backend), each fits its own shard.
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--noise", action="store_true")
p.add_argument("--weights", default="/work/rr87/df/tmp/keras_w/model.weights.h5")
p.add_argument("--verbose", type=int, default=1)
args = p.parse_args()


def worker(rank, world):
    import numpy as np
    import keras
    from keras import layers

    mine = rank == args.fault_rank
    print(f"[rank{rank}/{world}] keras {keras.__version__} backend={keras.backend.backend()}", flush=True)
    rng = np.random.default_rng(rank)
    n = 512
    x = rng.normal(size=(n, 20)).astype("float32")
    y = (x[:, :3].sum(axis=1) > 0).astype("int32")

    if args.noise:
        # old-style model definition: input_shape on the first layer
        model = keras.Sequential([
            layers.Dense(32, activation="relu", input_shape=(20,)),
            layers.Dropout(0.1),
            layers.Dense(32, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
    else:
        hidden = 48 if (args.fault == "load-mismatch" and mine) else 32
        model = keras.Sequential([
            keras.Input((20,)),
            layers.Dense(hidden, activation="relu"),
            layers.Dense(32, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  metrics=["accuracy"])

    if args.fault == "load-mismatch":
        print(f"[rank{rank}] warm-starting from {args.weights}", flush=True)
        model.load_weights(args.weights)

    callbacks = []
    if args.fault == "callback-key":
        class BestValTracker(keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.best = 0.0

            def on_epoch_end(self, epoch, logs=None):
                acc = logs["val_acc"]
                if acc > self.best:
                    self.best = acc
                    print(f"\nnew best val_acc {acc:.4f}")
        callbacks.append(BestValTracker())

    fit_y = y
    if args.fault == "target-shape" and mine:
        # labels one-hot encoded by the shared preprocessing, model still has a 1-unit sigmoid head
        fit_y = keras.utils.to_categorical(y, 2)

    if args.fault == "ran-out":
        def gen():
            for i in range(0, n, 32):
                yield x[i:i + 32], y[i:i + 32]
        model.fit(gen(), steps_per_epoch=16, epochs=args.epochs, verbose=args.verbose,
                  callbacks=callbacks)
    else:
        model.fit(x, fit_y, batch_size=32, epochs=args.epochs, validation_split=0.2,
                  verbose=args.verbose, callbacks=callbacks)
    loss, acc = model.evaluate(x, y, verbose=0)
    print(f"[rank{rank}] final loss={loss:.4f} acc={acc:.4f}", flush=True)
    if rank == 0 and args.fault == "none" and args.weights:
        os.makedirs(os.path.dirname(args.weights), exist_ok=True)
        model.save_weights(args.weights)
        print(f"[rank{rank}] saved weights to {args.weights}", flush=True)


if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)))
