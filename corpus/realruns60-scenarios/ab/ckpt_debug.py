"""Checkpoint save/resume toy trainer with debugging aids (python -X dev, DEBUG logging,
TORCH_SHOW_CPP_STACKTRACES, anomaly mode). --fault selects the checkpoint problem."""
import argparse, faulthandler, logging, os, sys, time, warnings
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--ckpt-dir", default="ckpt_out")
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--vocab", type=int, default=1000)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--compile", action="store_true")
p.add_argument("--faulthandler-exit", action="store_true")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--slow-eval", type=float, default=0)
p.add_argument("--faulthandler-timeout", type=float, default=0)
args = p.parse_args()

logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(levelname)-7s %(name)s | %(message)s")
log = logging.getLogger("ckpt_trainer")
faulthandler.enable()
if args.anomaly:
    torch.autograd.set_detect_anomaly(True)


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx):
        return self.head(torch.tanh(self.proj(self.emb(idx))))


model = TinyLM(args.vocab, args.hidden)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
log.debug("model params: %d", sum(p.numel() for p in model.parameters()))
start = 0
if args.resume:
    log.info("resuming from %s", args.resume)
    state = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optim"])
    start = state["step"]
    log.info("resumed at step %d", start)

if args.faulthandler_timeout:
    faulthandler.dump_traceback_later(args.faulthandler_timeout, repeat=False, exit=args.faulthandler_exit)

if args.fault == "sched_first":
    # scheduler stepped at the top of the epoch (old PyTorch <1.1 ordering)
    sched.step()

g = torch.Generator().manual_seed(0)
fwd = torch.compile(model, backend="eager") if args.compile else model
for step in range(start, start + args.steps):
    seq = 16 + (step % 4) * 8 if args.compile else 16  # bucketed sequence lengths
    idx = torch.randint(0, args.vocab, (4, seq), generator=g)
    logits = fwd(idx[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), idx[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.fault != "sched_first":
        sched.step()
    if step % 5 == 0:
        log.info("step %d loss %.4f lr %.2e", step, loss.item(), sched.get_last_lr()[0])
    if args.slow_eval and step == start + args.steps // 2:
        log.info("running evaluation pass")
        t0 = time.time()
        with torch.no_grad():
            while time.time() - t0 < args.slow_eval:
                model(torch.randint(0, args.vocab, (64, 64)))
        log.info("eval done in %.1fs", time.time() - t0)

os.makedirs(args.ckpt_dir, exist_ok=True)
path = os.path.join(args.ckpt_dir, "last.pt")
state = {"model": model.state_dict(), "optim": opt.state_dict(), "step": start + args.steps}
if args.fault == "save_args":
    state["args"] = args  # argparse.Namespace pickled into the checkpoint
torch.save(state, path)
log.info("saved checkpoint %s (%d bytes)", path, os.path.getsize(path))
if args.fault == "truncate":
    # copy to "shared storage" interrupted half-way
    with open(path, "rb") as f:
        data = f.read()
    with open(os.path.join(args.ckpt_dir, "last_copy.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    log.info("copied checkpoint to %s", os.path.join(args.ckpt_dir, "last_copy.pt"))
log.info("done")
