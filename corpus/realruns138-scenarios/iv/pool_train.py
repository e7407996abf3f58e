"""Hyper-parameter sweep: each job trains a tiny MLP in a worker process.
Flags: --runner {futures,pool,joblib}  --fault {none,segv,memcap,lambda,hpkey,missingdata,rodir,cputime}  --bad-job N
"""
import argparse, os, sys, time, warnings, logging, json, resource
import numpy as np
import torch, torch.nn as nn

def make_data(n=256, d=16, seed=0, path=None):
    if path is not None:
        arr = np.load(path)
        x = torch.from_numpy(arr["x"]).float(); y = torch.from_numpy(arr["y"]).float()
        return x, y
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g); y = (x.sum(1, keepdim=True) > 0).float()
    return x, y

def train_job(hp):
    log = logging.getLogger("sweep")
    jid = hp["job"]
    if hp.get("memcap_mb"):
        cap = hp["memcap_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    if hp.get("cpu_soft"):
        resource.setrlimit(resource.RLIMIT_CPU, (hp["cpu_soft"], resource.RLIM_INFINITY))
    x, y = make_data(seed=jid, path=hp.get("data"))
    model = nn.Sequential(nn.Linear(x.shape[1], hp["hidden"]), nn.ReLU(), nn.Linear(hp["hidden"], 1))
    opt = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=hp["momentum"])
    lossf = nn.BCEWithLogitsLoss()
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=hp["steps"]) if hp.get("sched") else None
    batches = None
    if hp.get("loader_workers"):
        from torch.utils.data import TensorDataset, DataLoader
        dl = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=hp["loader_workers"])
        batches = iter(dl)
    for step in range(hp["steps"]):
        if batches is not None:
            try: xb, yb = next(batches)
            except StopIteration: batches = iter(dl); xb, yb = next(batches)
            x, y = xb, yb
        if hp.get("segv_at") == step:
            import ctypes
            ctypes.string_at(0)  # buggy native helper dereferences NULL
        if sched is not None: sched.step()
        opt.zero_grad(); loss = lossf(model(x), y); loss.backward(); opt.step()
        if step % 10 == 0:
            print(f"[job {jid} pid {os.getpid()}] step {step} loss {loss.item():.4f}", flush=True)
    if hp.get("burn"):
        t = torch.randn(256, 256)
        while True:
            t = torch.tanh(t @ t)
    out = hp.get("outdir")
    if out:
        p = os.path.join(out, f"job{jid}.pt")
        torch.save(model.state_dict(), p)
        print(f"[job {jid}] saved {p}", flush=True)
    return {"job": jid, "loss": float(loss.item())}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", default="futures")
    ap.add_argument("--fault", default="none")
    ap.add_argument("--bad-job", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--outdir", default=None)
    ap.add_argument("--datadir", default=None)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("sweep")
    hps = []
    for j in range(a.jobs):
        hp = {"job": j, "hidden": [16, 32, 64, 128][j % 4], "lr": [0.1, 0.05, 0.01, 0.3][j % 4], "momentum": 0.9, "steps": a.steps, "outdir": a.outdir}
        if a.datadir:
            hp["data"] = os.path.join(a.datadir, f"shard{j}.npz")
        if j == a.bad_job:
            if a.fault == "segv": hp["segv_at"] = 15
            if a.fault == "memcap": hp["memcap_mb"] = 600; hp["hidden"] = 200000
            if a.fault == "cputime": hp["cpu_soft"] = 3; hp["burn"] = True
            if a.fault == "hpkey": del hp["momentum"]
        if a.fault == "loaderworkers": hp["loader_workers"] = 2
        hps.append(hp)
    log.info("launching %d jobs on %d workers via %s", len(hps), a.workers, a.runner)
    if a.fault == "none":
        for hp in hps: hp["sched"] = True
    results = []
    if a.runner == "futures":
        from concurrent.futures import ProcessPoolExecutor, as_completed
        with ProcessPoolExecutor(max_workers=a.workers) as ex:
            futs = {ex.submit(train_job, hp): hp["job"] for hp in hps}
            for f in as_completed(futs):
                r = f.result(); log.info("job %d done: %s", futs[f], r); results.append(r)
    elif a.runner == "pool":
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        with ctx.Pool(a.workers) as pool:
            if a.fault == "lambda":
                fn = lambda hp: train_job(hp)  # wrapper closes over nothing, but lambdas don't pickle
            else:
                fn = train_job
            for r in pool.imap_unordered(fn, hps):
                log.info("job %d done: %s", r["job"], r); results.append(r)
    elif a.runner == "joblib":
        from joblib import Parallel, delayed
        results = Parallel(n_jobs=a.workers, verbose=10)(delayed(train_job)(hp) for hp in hps)
    best = min(results, key=lambda r: r["loss"])
    log.info("sweep finished, best job %d loss %.4f", best["job"], best["loss"])

if __name__ == "__main__":
    main()
