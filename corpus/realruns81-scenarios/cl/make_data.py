"""Build node-local data shards: make_data.py DIR [--feat N] [--vocab V] [--nan]"""
import argparse, json, os, torch
p = argparse.ArgumentParser(); p.add_argument("dir"); p.add_argument("--feat", type=int, default=32)
p.add_argument("--vocab", type=int, default=256); p.add_argument("--nan", action="store_true")
a = p.parse_args(); os.makedirs(a.dir, exist_ok=True); g = torch.Generator().manual_seed(1)
x = torch.randn(512, a.feat, generator=g); y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
if a.nan:
    x[::7, 3] = float("nan")  # normalisation divided by a zero std column
torch.save({"x": x, "y": y}, os.path.join(a.dir, "shard.pt"))
ids = torch.randint(0, a.vocab, (512, 12), generator=g)
torch.save({"x": ids, "y": ids[:, 0] % 4}, os.path.join(a.dir, "tokens.pt"))
json.dump({"n": 512, "files": ["shard.pt", "tokens.pt"]}, open(os.path.join(a.dir, "index.json"), "w"))
