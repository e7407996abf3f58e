"""Write resume checkpoints: model.pt + per-rank optimizer shards (optim-rank<r>.pt).

--stale-rank R: rank R's optimizer shard comes from the older run whose model still had the aux head.
--model-from-aux: model.pt itself comes from the aux-head model.
"""
import argparse, os, sys, torch
sys.argv_backup = sys.argv
p = argparse.ArgumentParser(); p.add_argument("--out"); p.add_argument("--world", type=int, default=2)
p.add_argument("--stale-rank", type=int, default=-1); p.add_argument("--model-from-aux", action="store_true")
a = p.parse_args()
sys.argv = [sys.argv[0]]
import importlib.util
os.environ.setdefault("RANK", "0")
spec = importlib.util.spec_from_file_location("ds", os.path.join(os.path.dirname(__file__), "ddp_shards.py"))
ds = importlib.util.module_from_spec(spec); spec.loader.exec_module(ds)
os.makedirs(a.out, exist_ok=True)
def trained(extra):
    torch.manual_seed(0)
    m = ds.TinyLM(100, 64, extra_head=extra)
    o = torch.optim.AdamW(m.parameters(), lr=3e-3)
    x = torch.randint(0, 100, (4, 33))
    y, aux = m(x[:, :-1]); l = torch.nn.functional.cross_entropy(y.reshape(-1, 100), x[:, 1:].reshape(-1))
    if aux is not None: l = l + aux
    l.backward(); o.step()
    return m, o
new_m, new_o = trained(False); old_m, old_o = trained(True)
torch.save({"model": (old_m if a.model_from_aux else new_m).state_dict(), "step": 1200}, os.path.join(a.out, "model.pt"))
for r in range(a.world):
    torch.save((old_o if r == a.stale_rank else new_o).state_dict(), os.path.join(a.out, f"optim-rank{r}.pt"))
print("wrote", sorted(os.listdir(a.out)))
