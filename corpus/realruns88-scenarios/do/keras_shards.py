"""Keras 3 classifier trained on per-rank shards; weights averaged across ranks after each
epoch through torch.distributed (gloo). Launch with torchrun, or --spawn N to use
torch.multiprocessing.spawn. --fault selects a bug on --fault-rank."""
import argparse, os, sys, datetime

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=38530)
p.add_argument("--weights", default=None)
p.add_argument("--units", type=int, default=32)
p.add_argument("--load-weights", default=None)
p.add_argument("--early-import", action="store_true")
args = p.parse_args()

import numpy as np
if "--early-import" in sys.argv:
    from keras import ops as K  # helper ops used by make_shard (imported before the backend is chosen)
import torch
import torch.distributed as dist

def build(units):
    import keras
    inp = keras.Input(shape=(20,))
    x = keras.layers.Dense(units, activation="relu", name="dense_in")(inp)
    x = keras.layers.Dropout(0.1)(x)
    x = keras.layers.Dense(units, activation="relu", name="dense_mid")(x)
    out = keras.layers.Dense(4, activation="softmax", name="head")(x)
    return keras.Model(inp, out)

def make_shard(rank, n=512):
    rs = np.random.RandomState(rank)
    x = rs.randn(n, 20).astype("float32")
    y = (np.abs(x[:, :4]).argmax(axis=1)).astype("int64")
    if args.fault == "onehot" and rank == args.fault_rank:
        # this shard was exported by the new preprocessing job with one-hot labels
        y = np.eye(4, dtype="float32")[y]
    return x, y

def worker(rank, world, lr_schedule=None):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=int(os.environ.get("PG_TIMEOUT", "60"))))
    print(f"[rank {rank}] keras {keras.__version__} backend={keras.backend.backend()} world={world}", flush=True)
    keras.utils.set_random_seed(0)
    model = build(args.units)
    if args.load_weights:
        print(f"[rank {rank}] loading weights from {args.load_weights}", flush=True)
        model.load_weights(args.load_weights)
    model.compile(optimizer=keras.optimizers.Adam(lr_schedule(0) if lr_schedule else 1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = make_shard(rank)
    for ep in range(args.epochs):
        h = model.fit(x, y, batch_size=64, epochs=1, verbose=2 if rank == 0 else 0)
        if args.fault == "skip-sync" and rank == args.fault_rank and h.history["loss"][-1] < 1.5:
            # local early-stopping check: this rank thinks it has converged and stops syncing
            print(f"[rank {rank}] local loss below threshold, skipping weight averaging", flush=True)
            break
        # average weights across ranks
        new = []
        for w in model.get_weights():
            t = torch.from_numpy(np.ascontiguousarray(w))
            dist.all_reduce(t)
            new.append((t / world).numpy())
        model.set_weights(new)
        print(f"[rank {rank}] epoch {ep} loss={h.history['loss'][-1]:.4f} acc={h.history['accuracy'][-1]:.3f}", flush=True)
    if args.weights and rank == 0:
        model.save_weights(args.weights)
        print(f"[rank 0] saved {args.weights}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        sched = None
        if args.fault == "lambda-schedule":
            sched = lambda epoch: 1e-3 * (0.5 ** epoch)   # per-epoch LR decay passed to workers
        mp.spawn(worker, args=(args.spawn, sched), nprocs=args.spawn)
    else:
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
