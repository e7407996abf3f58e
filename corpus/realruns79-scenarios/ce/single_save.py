"""Single-process trainer (plain `python`), periodic checkpoints, Python logging with timestamps.
--whole-model: torch.save(model) instead of state_dict; --atomic: write to tmp file object then rename."""
import argparse, os, logging, time, warnings
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--save-every", type=int, default=20)
p.add_argument("--out", default="single_ckpt")
p.add_argument("--whole-model", action="store_true")
p.add_argument("--atomic", action="store_true")
p.add_argument("--act", default="gelu_tanh")
p.add_argument("--hidden", type=int, default=256)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s | %(message)s")
log = logging.getLogger("train")

ACTS = {"relu": nn.ReLU(), "gelu": nn.GELU()}

class MLP(nn.Module):
    def __init__(self, d_in, hidden, n_cls, act):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_cls)
        # activation chosen from config; custom ones defined inline
        if act in ACTS:
            self.act = ACTS[act]
        elif act == "gelu_tanh":
            self.act = lambda x: nn.functional.gelu(x, approximate="tanh")
        else:
            raise ValueError(act)
    def forward(self, x):
        return self.out(self.act(self.fc2(self.act(self.fc1(x)))))

torch.manual_seed(0)
X = torch.randn(2048, 128); W = torch.randn(128, 10); Y = (X @ W).argmax(1)
model = MLP(128, args.hidden, 10, args.act)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
log.info("model: %d params, act=%s", sum(p.numel() for p in model.parameters()), args.act)
os.makedirs(args.out, exist_ok=True)
t0 = time.time()
for step in range(1, args.steps + 1):
    idx = torch.randint(0, 2048, (64,))
    loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0:
        acc = (model(X[:256]).argmax(1) == Y[:256]).float().mean().item()
        log.info("step %4d | loss %.4f | acc %.3f | %.1f it/s", step, loss.item(), acc, step / (time.time() - t0))
    if step % args.save_every == 0:
        path = os.path.join(args.out, f"ckpt_{step:05d}.pt")
        obj = {"model": model if args.whole_model else model.state_dict(), "optimizer": opt.state_dict(), "step": step}
        if args.atomic:
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                torch.save(obj, f)
                f.flush(); os.fsync(f.fileno())
            os.replace(tmp, path)
        else:
            torch.save(obj, path)
        log.info("checkpoint written: %s (%.1f MB)", path, os.path.getsize(path) / 1e6)
log.info("finished %d steps", args.steps)
