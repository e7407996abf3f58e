"""Single-process training with a metrics writer; --fault lock-reentry makes the writer deadlock on its own
non-reentrant lock when its buffer first fills up (flush() -> _log() takes the lock again)."""
import argparse
import faulthandler
import sys
import threading
import time

import torch
import torch.nn as nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "lock-reentry"])
p.add_argument("--steps", type=int, default=400)
p.add_argument("--buffer", type=int, default=64)
p.add_argument("--dump-after", type=float, default=0)
args = p.parse_args()


class MetricsWriter:
    def __init__(self, path, buffer):
        self.path, self.buffer, self.rows = path, buffer, []
        self.lock = threading.Lock()

    def _log(self, msg):
        with self.lock:
            self.rows.append(msg)

    def flush(self):
        with self.lock:
            rows, self.rows = self.rows, []
            with open(self.path, "a") as f:
                f.writelines(r + "\n" for r in rows)
            if args.fault == "lock-reentry":
                self._log(f"flushed {len(rows)} rows")
            else:
                self.rows.append(f"flushed {len(rows)} rows")

    def add(self, step, **kv):
        self._log(f"{step}," + ",".join(f"{k}={v:.5f}" for k, v in kv.items()))
        if len(self.rows) >= self.buffer:
            self.flush()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.dump_after:
        faulthandler.dump_traceback_later(args.dump_after, repeat=True)
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 26 * 26, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    writer = MetricsWriter("/tmp/hc_out/hang_single_metrics.csv", args.buffer)
    x = torch.randn(512, 1, 28, 28)
    y = torch.randint(0, 10, (512,))
    bar = tqdm(range(args.steps), desc="epoch 0", ncols=100)
    for step in bar:
        i = (step * 32) % 512
        loss = nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.03)
        writer.add(step, loss=loss.item())
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 25 == 0:
            tqdm.write(f"step {step} loss {loss.item():.4f}")
    writer.flush()
    print("done")


if __name__ == "__main__":
    main()
