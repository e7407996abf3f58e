"""Single-process trainer used under resource limits / leftover state.

--mode:
  train   plain training with tqdm, writes checkpoints with torch.save(f) every --ckpt-every steps and
          appends metrics to a jsonl file (use under `ulimit -f` / `ulimit -t` / SIGINT)
  lock    tokenises a corpus into a shared cache guarded by filelock.SoftFileLock (as many data-prep
          scripts do), then trains
"""
import argparse, os, sys, time, json, random
import torch
import torch.nn as nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train")
p.add_argument("--steps", type=int, default=400)
p.add_argument("--ckpt-every", type=int, default=50)
p.add_argument("--out", default="/tmp/fz_limits_out")
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--lock-timeout", type=float, default=30)
p.add_argument("--prep-seconds", type=float, default=20)
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()
torch.set_num_threads(1)
os.makedirs(args.out, exist_ok=True)


def train():
    model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(4096, 64)
    Y = (X[:, :10].argmax(1))
    metrics = open(os.path.join(args.out, "metrics.jsonl"), "a")
    bar = tqdm(range(args.steps), desc="train", mininterval=0.5)
    for step in bar:
        idx = torch.randint(0, len(X), (128,))
        loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.sleep:
            time.sleep(args.sleep)
        metrics.write(json.dumps({"step": step, "loss": loss.item()}) + "\n")
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if (step + 1) % args.ckpt_every == 0:
            path = os.path.join(args.out, f"ckpt_step{step + 1}.pt")
            with open(path, "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, f)
            tqdm.write(f"saved {path} ({os.path.getsize(path) / 1e6:.2f} MB)")
    metrics.close()
    print("done", flush=True)


def lock_then_train():
    from filelock import SoftFileLock
    cache = os.path.join(args.out, "tokens.pt")
    lock = SoftFileLock(cache + ".lock", timeout=args.lock_timeout)
    print(f"[prep] acquiring {cache}.lock (timeout {args.lock_timeout}s)", flush=True)
    with lock:
        if not os.path.exists(cache):
            print("[prep] building token cache ...", flush=True)
            rnd = random.Random(0)
            toks = []
            for i in tqdm(range(200), desc="tokenize shards"):
                toks.append(torch.tensor([rnd.randrange(1000) for _ in range(2000)]))
                time.sleep(args.prep_seconds / 200)
            torch.save(torch.stack(toks), cache)
        data = torch.load(cache)
    print(f"[prep] cache ready: {tuple(data.shape)}", flush=True)
    train()


if __name__ == "__main__":
    lock_then_train() if args.mode == "lock" else train()
