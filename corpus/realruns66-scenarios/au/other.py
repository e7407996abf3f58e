"""Failures outside the usual classes. --fault selects one, --rank/--step where."""
import os, sys, csv, json, subprocess, argparse, time
import numpy as np
import torch, torch.nn.functional as F, torch.distributed as dist
from _common import *

p = argparse.ArgumentParser()
p.add_argument("--fault", required=True)
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=6)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--out", default="/tmp/au_out")
p.add_argument("--config", default=None)
p.add_argument("--data", default=None)
p.add_argument("--spawn", type=int, default=0)
a = p.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))

def load_csv_shard(path):
    xs, ys = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            xs.append([float(row[f"f{i}"]) for i in range(16)])
            ys.append(int(row["label"]))
    return TensorDataset(torch.tensor(xs), torch.tensor(ys))

def main(rank, world):
    log = make_logger(rank)
    cfg = {"lr": 0.1, "epochs": a.epochs, "bs": 32}
    if a.config:
        with open(a.config) as f:
            cfg.update(json.load(f))
        log.info("config: %s", cfg)
    torch.manual_seed(0)
    net = wrap(MLP(), world)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg["lr"] / 100)
    if a.data:
        ds = load_csv_shard(os.path.join(a.data, f"shard-{rank:05d}.csv"))
        log.info("loaded %d rows from shard-%05d.csv", len(ds), rank)
        dl = DataLoader(ds, batch_size=cfg["bs"], shuffle=True)
    else:
        dl = loader(data(), rank, world, bs=cfg["bs"])
    os.makedirs(a.out, exist_ok=True)
    g = 0
    for ep in range(cfg["epochs"]):
        for x, y in dl:
            g += 1
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if g % 4 == 0 and rank == 0:
                log.info("epoch %d step %d loss %.4f", ep, g, loss.item())
        if a.fault == "ascii" and rank == a.rank:
            print(f"epoch {ep} \u2713 loss {loss.item():.4f} \u2192 best so far", flush=True)
        if a.fault == "asciilog" and rank == a.rank:
            log.info("epoch %d \u2713 val improved \u2192 loss %.4f", ep, loss.item())
        if a.fault == "efbig" and rank == a.rank:
            emb = torch.cat([p.detach().flatten() for p in net.parameters()]).repeat(4000).numpy()
            path = os.path.join(a.out, f"params_ep{ep}.tsv")
            log.info("exporting flat params (%d floats) to %s", emb.size, path)
            with open(path, "w") as f:
                for i in range(0, emb.size, 64):
                    f.write("\t".join(f"{v:.6f}" for v in emb[i:i+64]) + "\n")
        if a.fault == "namelong" and rank == 0:
            tag = "_".join(f"{k}={v}".replace("/", "-") for k, v in sorted(vars(a).items())) + "_" + "_".join(
                f"{n.replace('.', '-')}={tuple(p.shape)}" for n, p in net.named_parameters()) * 6
            path = os.path.join(a.out, f"ckpt_ep{ep}_{tag}.pt")
            torch.save(net.state_dict(), path)
            log.info("saved %s", path)
        if a.fault == "subproc" and rank == a.rank:
            pred = os.path.join(a.out, f"preds_ep{ep}.jsonl")
            with open(pred, "w") as f:
                for i in range(8): f.write(json.dumps({"id": i, "text": "a b c"}) + "\n")
            log.info("running external evaluator on %s", pred)
            res = subprocess.run([sys.executable, os.path.join(HERE, "tools", "eval_bleu.py"),
                                  "--pred-file", pred, "--refs", pred], check=True, capture_output=False)
        if world > 1:
            t = torch.tensor([loss.item()]); dist.all_reduce(t)
            if rank == 0: log.info("epoch %d mean loss %.4f", ep, t.item() / world)
    log.info("done")

if a.spawn:
    import torch.multiprocessing as mp
    def _w(rank, world):
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT="31220")
        r, w = setup(timeout=30)
        main(r, w); cleanup(w)
    if __name__ == "__main__":
        mp.spawn(_w, args=(a.spawn,), nprocs=a.spawn)
else:
    r, w = setup(timeout=30)
    main(r, w); cleanup(w)
