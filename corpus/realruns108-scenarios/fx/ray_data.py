"""Ray Data pipelines feeding a small torch model."""
import argparse, os, json, logging, time
import numpy as np
import ray

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="/work/rr108/fx/work/jsonl")
p.add_argument("--bad-line", type=int, default=1337)
p.add_argument("--rows", type=int, default=4000)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("fx.data")


def write_jsonl(path, rows, bad_line):
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(0)
    per = rows // 4
    n = 0
    for part in range(4):
        with open(os.path.join(path, f"part-{part:03d}.jsonl"), "w") as f:
            for i in range(per):
                rec = {"id": n, "x": rng.normal(size=8).round(4).tolist(), "label": int(rng.integers(0, 3))}
                line = json.dumps(rec)
                if n == bad_line:
                    line = line[: len(line) // 2]  # record cut off when the writer was killed mid-flush
                f.write(line + "\n")
                n += 1


def parse(batch):
    xs, ys = [], []
    for line in batch["text"]:
        rec = json.loads(line)
        xs.append(np.asarray(rec["x"], dtype=np.float32))
        ys.append(rec["label"])
    return {"x": np.stack(xs), "label": np.asarray(ys, dtype=np.int64)}


def main():
    import torch, torch.nn as nn
    ray.init(num_cpus=2, include_dashboard=False)
    bad = args.bad_line if args.fault == "bad-record" else -1
    src = args.data + ("_bad" if bad >= 0 else "_ok")
    write_jsonl(src, args.rows, bad)
    log.info("wrote %d records to %s", args.rows, src)
    ds = ray.data.read_text(src)
    ds = ds.map_batches(parse, batch_size=256)
    if args.fault == "filter-empty":
        # keep only confident labels; label is an int 0..2 but the threshold came from a probability config
        ds = ds.filter(lambda r: r["label"] > 2.5)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(2):
        tot, n = 0.0, 0
        for batch in ds.iter_torch_batches(batch_size=128):
            out = model(batch["x"])
            loss = nn.functional.cross_entropy(out, batch["label"])
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); n += 1
        log.info("epoch %d mean loss %.4f over %d batches", epoch, tot / n, n)
    log.info("done")
    ray.shutdown()


if __name__ == "__main__":
    main()
