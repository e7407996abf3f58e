"""Keras 3 (JAX backend) data-parallel fit across processes with jax.distributed (CPU).
Launch: python keras_jax_multi.py --launch N  (starts N processes), --kill-rank R kills process R mid-fit."""
import argparse, os, sys, time, subprocess, signal
p = argparse.ArgumentParser()
p.add_argument("--launch", type=int, default=0)
p.add_argument("--pid", type=int, default=0)
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--port", type=int, default=40840)
p.add_argument("--epochs", type=int, default=30)
p.add_argument("--kill-rank", type=int, default=-1)
p.add_argument("--kill-epoch", type=int, default=3)
p.add_argument("--seed", action="store_true")
args = p.parse_args()

if args.launch:
    procs = []
    for i in range(args.launch):
        cmd = [sys.executable, "-u", __file__, "--pid", str(i), "--nproc", str(args.launch), "--port", str(args.port),
               "--epochs", str(args.epochs), "--kill-rank", str(args.kill_rank), "--kill-epoch", str(args.kill_epoch)] + (["--seed"] if args.seed else [])
        procs.append(subprocess.Popen(cmd, env=dict(os.environ, KERAS_BACKEND="jax")))
    rcs = [pr.wait() for pr in procs]
    print(f"launcher: exit codes {rcs}", flush=True)
    sys.exit(max(abs(r) for r in rcs))

import jax
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}", num_processes=args.nproc,
                           process_id=args.pid, heartbeat_timeout_seconds=15, initialization_timeout=60)
import numpy as np
import keras
from keras import layers

print(f"[proc {jax.process_index()}/{jax.process_count()}] devices={jax.devices()} local={jax.local_devices()}", flush=True)
devices = jax.devices()
dist = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)  # each process loads its own shard
keras.distribution.set_distribution(dist)

if args.seed:
    keras.utils.set_random_seed(1234)  # identical initial weights on every process
rng = np.random.default_rng(args.pid)
x = rng.normal(size=(2048, 32)).astype("float32")
y = (x[:, :3].sum(1) > 0).astype("float32")

model = keras.Sequential([keras.Input((32,)), layers.Dense(64, activation="relu"), layers.Dense(64, activation="relu"),
                          layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])


class Chaos(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if args.pid == args.kill_rank and epoch == args.kill_epoch:
            # host process dies (simulating the node being taken away)
            os.kill(os.getpid(), signal.SIGKILL)


model.fit(x, y, epochs=args.epochs, batch_size=64, verbose=2 if args.pid == 0 else 0, callbacks=[Chaos()])
print(f"[proc {args.pid}] done", flush=True)
