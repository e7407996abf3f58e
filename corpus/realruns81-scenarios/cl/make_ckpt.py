"""Derive resume checkpoints from a real training checkpoint, the way older trainer versions wrote them.
make_ckpt.py SRC DST [--with-args] [--split-groups] [--truncate N]"""
import argparse, torch
p = argparse.ArgumentParser(); p.add_argument("src"); p.add_argument("dst")
p.add_argument("--with-args", action="store_true"); p.add_argument("--split-groups", action="store_true")
p.add_argument("--truncate", type=int, default=0)
a = p.parse_args()
if a.truncate:  # copy interrupted after N bytes (e.g. rsync killed)
    open(a.dst, "wb").write(open(a.src, "rb").read()[: a.truncate]); raise SystemExit
ck = torch.load(a.src)
if a.with_args:  # v1 trainer stored the argparse namespace next to the weights
    ck["args"] = argparse.Namespace(lr=0.05, hidden=64, feat=32, steps=40)
if a.split_groups:  # v2 trainer used decay / no-decay groups
    st = ck["optim"]; ids = st["param_groups"][0]["params"]
    g0 = dict(st["param_groups"][0], params=ids[::2], weight_decay=0.01)
    g1 = dict(st["param_groups"][0], params=ids[1::2], weight_decay=0.0)
    st["param_groups"] = [g0, g1]
torch.save(ck, a.dst)
