"""Healthy DDP training runs whose logs look alarming. --mode selects the noise."""
import argparse, os, sys, time, signal, logging, warnings, errno
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--mode", required=True)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--ckpt-dir", default="/work/rr55/n/tmp/ckpt")
p.add_argument("--fail-rank", type=int, default=1)
a = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
if distributed:
    model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
start = 0

def save(step, path=None):
    os.makedirs(a.ckpt_dir, exist_ok=True)
    path = path or os.path.join(a.ckpt_dir, f"step{step}.pt")
    sd = model.module.state_dict() if distributed else model.state_dict()
    torch.save({"model": sd, "opt": opt.state_dict(), "step": step}, path)
    return path

if a.mode == "optional":
    for mod, feat in [("apex", "fused LayerNorm"), ("flash_attn", "FlashAttention-2"), ("wandb", "W&B logging"), ("deepspeed", "ZeRO offload"), ("bitsandbytes", "8-bit Adam")]:
        try:
            __import__(mod)
        except ImportError as e:
            log.warning("optional feature %s disabled: %r", feat, e)
    try:
        torch.zeros(1).cuda()
    except (AssertionError, RuntimeError) as e:
        log.warning("CUDA probe failed, continuing on CPU: %s", e)
    try:
        import tensorboard  # noqa
    except ImportError:
        log.error("Traceback suppressed: tensorboard not installed; TensorBoard logging OFF")

if a.mode == "warnings":
    import numpy as np
    warnings.simplefilter("default")
    x = torch.arange(10, dtype=torch.float32)
    torch.tensor(x)  # UserWarning copy construct
    np.array([1.0]) / np.array([0.0])  # RuntimeWarning divide by zero
    sched_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    sch = torch.optim.lr_scheduler.StepLR(sched_opt, 5)
    sch.step()  # warning: lr_scheduler.step() before optimizer.step()
    torch.load  # noqa
    save(0, "/work/rr55/n/tmp/warn.pt")
    torch.load("/work/rr55/n/tmp/warn.pt", weights_only=False)
    nn.functional.softmax(torch.randn(3, 3))  # implicit dim deprecated
    try:
        import transformers
        from transformers import GPT2Config
        cfg = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=50, n_positions=16, foo_unused_arg=1)
        transformers.logging.get_logger("transformers").warning("`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.")
    except Exception as e:
        log.warning("transformers: %s", e)

if a.mode == "resume":
    ck = os.path.join(a.ckpt_dir, "last.pt")
    if os.path.exists(ck):
        s = torch.load(ck, weights_only=True)
        (model.module if distributed else model).load_state_dict(s["model"])
        opt.load_state_dict(s["opt"]); start = s["step"]
        log.info("rank %d resumed from %s at step %d", rank, ck, start)
    else:
        log.info("rank %d: no checkpoint at %s, starting fresh", rank, ck)

if a.mode == "fallback-ckpt":
    cands = sorted([f for f in os.listdir(a.ckpt_dir) if f.endswith(".pt")], key=lambda f: -int(f[4:-3])) if os.path.isdir(a.ckpt_dir) else []
    for f in cands:
        path = os.path.join(a.ckpt_dir, f)
        try:
            s = torch.load(path, weights_only=True)
        except Exception as e:
            log.exception("rank %d: failed to load %s, trying an older checkpoint", rank, path)
            continue
        (model.module if distributed else model).load_state_dict(s["model"]); start = s["step"]
        log.info("rank %d: resumed from %s (step %d)", rank, path, start)
        break

stop = {"flag": False}
if a.mode == "sigterm":
    def h(sig, frm):
        log.warning("rank %d received signal %s (SIGTERM); will checkpoint and exit after this step", rank, sig)
        stop["flag"] = True
    signal.signal(signal.SIGTERM, h)

if a.mode == "elastic-restart":
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    log.info("rank %d restart_count=%d", rank, restart)

bar = None
if a.mode in ("eval-anomaly", "optional"):
    try:
        from tqdm import tqdm
        bar = tqdm(total=a.steps - start, disable=rank != 0, desc="train", file=sys.stderr)
    except ImportError:
        pass

for step in range(start, a.steps):
    g = torch.Generator().manual_seed(step * 100 + rank)
    x = torch.randn(8, 16, generator=g); y = torch.randint(0, 4, (8,), generator=g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if bar: bar.update(1)
    if rank == 0 and step % 5 == 0:
        log.info("step %d loss %.4f lr %.3g", step, loss.item(), opt.param_groups[0]["lr"])
    if a.mode == "retry" and step % 10 == 9 and rank == 0:
        d = a.ckpt_dir + "_new"
        for attempt in range(1, 4):
            try:
                path = os.path.join(d, f"step{step}.pt")
                torch.save({"model": model.module.state_dict() if distributed else model.state_dict()}, path)
                log.info("saved checkpoint %s (attempt %d)", path, attempt)
                break
            except (RuntimeError, OSError) as e:
                log.error("checkpoint save failed (attempt %d/3): %s -- retrying in 1s", attempt, e)
                os.makedirs(d, exist_ok=True)
                time.sleep(1)
    if a.mode == "retry" and step == 14:
        # metrics all-reduce that is retried after a transient ValueError from a bad metric value
        for attempt in range(2):
            try:
                v = float("nan") if attempt == 0 and rank == a.fail_rank else loss.item()
                if v != v:
                    raise ValueError(f"metric 'train/loss' is NaN on rank {rank}, recomputing")
                log.info("rank %d metric ok %.4f", rank, v); break
            except ValueError as e:
                log.exception("rank %d metric reduce error, retry %d", rank, attempt + 1)
    if a.mode == "eval-anomaly" and step % 10 == 9:
        model.eval()
        with torch.no_grad():
            xe = torch.randn(0 if step == 19 else 8, 16)  # shard 2 of eval set empty on this epoch
            ye = torch.randint(0, 4, (xe.shape[0],))
            el = nn.functional.cross_entropy(model(xe), ye)
            acc = (model(xe).argmax(-1) == ye).float().mean()
        if rank == 0:
            log.warning("eval step %d: eval_loss=%s eval_acc=%s%s", step, el.item(), acc.item(),
                        "  <-- NaN on empty eval shard, ignored" if el.item() != el.item() else "")
        model.train()
    if a.mode == "elastic-restart" and step == 12 and rank == a.fail_rank and restart == 0:
        log.info("rank %d: loading next data shard", rank)
        with open("/work/rr55/n/tmp/shard_%d.bin" % step, "rb") as f:
            f.read()
    if a.mode == "sigterm":
        time.sleep(0.3)
        if distributed:
            t = torch.tensor([1.0 if stop["flag"] else 0.0]); dist.all_reduce(t)
            flag = t.item() > 0
        else:
            flag = stop["flag"]
        if flag:
            pth = save(step)
            log.warning("rank %d: graceful shutdown at step %d, checkpoint %s written; exiting 0", rank, step, pth)
            break
    if a.mode == "resume" and step == a.steps // 2 - 1 and os.environ.get("STOP_HALF") == "1":
        if rank == 0:
            os.makedirs(a.ckpt_dir, exist_ok=True)
        if distributed: dist.barrier()
        s = {"model": (model.module if distributed else model).state_dict(), "opt": opt.state_dict(), "step": step + 1}
        if rank == 0: torch.save(s, os.path.join(a.ckpt_dir, "last.pt"))
        log.warning("rank %d: wall-clock budget of this allocation reached at step %d; saved last.pt, exiting to be requeued", rank, step + 1)
        break
    if a.mode == "fallback-ckpt" and step % 10 == 9 and rank == 0:
        save(step + 1)
if bar: bar.close()
if rank == 0:
    log.info("training finished at step %d", step + 1)
if distributed:
    dist.barrier(); dist.destroy_process_group()
