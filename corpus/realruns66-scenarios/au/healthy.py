"""Healthy-but-alarming training runs. --mode selects the noise."""
import os, sys, time, json, socket, threading, signal, argparse, warnings, math
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from _common import *

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--rank", type=int, default=1)     # rank that shows the noise
p.add_argument("--step", type=int, default=5)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--ckpt", default="/tmp/au_ckpt")
p.add_argument("--tqdm", action="store_true")
a = p.parse_args()

rank, world = setup(timeout=40)
log = make_logger(rank)
torch.manual_seed(0)
model = MLP()
ddp_kw = {}
if a.mode == "unused":
    pass  # recipe default: find_unused_parameters=True copied from a multi-head model
    ddp_kw["find_unused_parameters"] = True
net = wrap(model, world, **ddp_kw)
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
ds = data(); dl = loader(ds, rank, world)
val = data(128, seed=1)

scaler = None
if a.mode == "warnings":
    scaler = torch.cuda.amp.GradScaler()          # old API, copied from a GPU recipe
if a.mode == "gradnan":
    scaler = torch.amp.GradScaler("cpu", init_scale=2.**16, growth_interval=1000)

start_epoch = 0
if a.mode == "restart":
    os.makedirs(a.ckpt, exist_ok=True)
    ck = os.path.join(a.ckpt, "last.pt")
    if os.path.exists(ck):
        sd = torch.load(ck)
        net.load_state_dict(sd["model"]); opt.load_state_dict(sd["opt"]); start_epoch = sd["epoch"] + 1
        log.info("resumed from %s (epoch %d), restart_count=%s", ck, sd["epoch"], os.environ.get("TORCHELASTIC_RESTART_COUNT"))

def metrics_server(port, delay):
    time.sleep(delay)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(4)
    while True:
        c, _ = s.accept(); c.recv(4096); c.sendall(b"OK\n"); c.close()

def push_metrics(port, payload, retries=6):
    for i in range(1, retries + 1):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
                c.sendall(json.dumps(payload).encode()); return c.recv(16)
        except OSError as e:
            log.warning("metrics push failed (%s: %s), retry %d/%d in 1.0s", type(e).__name__, e, i, retries)
            time.sleep(1.0)
    raise RuntimeError("metrics push failed")

if a.mode == "retry" and rank == a.rank:
    threading.Thread(target=metrics_server, args=(31247, 2.5), daemon=True).start()

best, bad, patience = math.inf, 0, 2
gstep = 0
it_wrap = (lambda x, **k: x)
if a.tqdm:
    from tqdm import tqdm
    it_wrap = tqdm
for epoch in range(start_epoch, a.epochs):
    if world > 1: dl.sampler.set_epoch(epoch)
    if a.mode == "warnings" and epoch == 0:
        sched.step()   # called before opt.step: triggers the ordering warning
    net.train()
    bar = it_wrap(dl, desc=f"epoch {epoch}", disable=(rank != 0), file=sys.stdout, mininterval=0.2) if a.tqdm else dl
    for x, y in bar:
        gstep += 1
        if a.mode == "gradnan" and gstep == a.step and rank == a.rank:
            x = x.clone(); x[0] = 3e38     # one record with an overflowing feature value
        if a.mode == "warnings":
            x = torch.tensor(x)             # copy-construct warning
        out = net(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        if scaler is not None:
            scaler.scale(loss).backward()
            old = scaler.get_scale() if scaler.is_enabled() else 1.0
            scaler.step(opt); scaler.update()
            if scaler.is_enabled() and scaler.get_scale() < old:
                log.warning("step %d: gradient overflow (inf/nan grads), optimizer step skipped, loss scale %.1f -> %.1f", gstep, old, scaler.get_scale())
        else:
            loss.backward(); opt.step()
        if a.mode == "restart" and rank == a.rank and epoch == 1 and gstep % 8 == 3 and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
            log.info("step %d", gstep)
            os.kill(os.getpid(), signal.SIGKILL)   # node agent OOM-killer / preemption stand-in
        if a.mode == "caught" and rank == a.rank and gstep == a.step:
            try:
                with open("/mnt/team-dashboard/metrics/run-au.json", "w") as f:
                    json.dump({"step": gstep, "loss": loss.item()}, f)
            except Exception:
                log.exception("could not export metrics to dashboard; continuing without it")
        if a.mode == "retry" and rank == a.rank and gstep == a.step:
            r = push_metrics(31247, {"step": gstep, "loss": loss.item()})
            log.info("metrics pushed after retries: %s", r.strip().decode())
        if gstep % 4 == 0 and rank == 0 and not a.tqdm:
            log.info("epoch %d step %d loss %.4f lr %.4f", epoch, gstep, loss.item(), sched.get_last_lr()[0])
    sched.step()
    net.eval()
    with torch.no_grad():
        vx, vy = val.tensors
        if a.mode == "warnings":
            probs = F.softmax(net(vx))      # implicit dim
        vloss = F.cross_entropy(net(vx), vy).item()
        acc = (net(vx).argmax(1) == vy).float().mean().item()
    log.info("epoch %d done: val_loss %.4f val_acc %.3f", epoch, vloss, acc)
    if a.mode == "restart" and rank == 0:
        torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, os.path.join(a.ckpt, "last.pt"))
        log.info("saved checkpoint epoch %d", epoch)
    if a.mode == "restart" and world > 1: dist.barrier()
    if a.mode == "earlystop":
        # validation plateaus: tiny lr after epoch 1 (recipe's cosine floor)
        if vloss < best - 1e-2:
            best, bad = vloss, 0
        else:
            bad += 1
            log.warning("val_loss did not improve (best %.4f), patience %d/%d", best, bad, patience)
            if bad >= patience:
                log.warning("Early stopping at epoch %d: no improvement for %d epochs", epoch, patience)
                break
        for g in opt.param_groups: g["lr"] = 1e-6
log.info("training finished, %d steps", gstep)
cleanup(world)
