"""Healthy training runs that print alarming-looking but harmless messages; also used as the
'victim' job for external interrupts (SIGINT/SIGTERM to the launcher, kill of a worker)."""
import os, sys, time, warnings, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import *


class TwoHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = make_model(classes=64)
        self.head = nn.Linear(64, 4)
        self.aux_head = nn.Linear(64, 4)   # only used when --aux-loss is on

    def forward(self, x, aux=False):
        h = torch.relu(self.body(x))
        return (self.head(h), self.aux_head(h)) if aux else self.head(h)


def main():
    p = base_parser()
    p.add_argument("--resume", default="")
    p.add_argument("--nan-step", type=int, default=-1)
    p.add_argument("--aux-loss", action="store_true")
    args = p.parse_args()
    distributed = "RANK" in os.environ
    rank, world = init_dist(args.timeout) if distributed else (0, 1)
    log = setup_logger(rank, args.logstyle)
    logger = logging.getLogger("train")
    torch.manual_seed(0)
    model = TwoHead()
    start = 0
    if args.resume:
        try:
            ck = torch.load(args.resume, map_location="cpu")
            model.load_state_dict(ck["model"]); start = ck["step"]
        except Exception:
            if args.logstyle == "logging":
                logger.exception(f"could not resume from {args.resume}; starting from scratch")
            else:
                import traceback; traceback.print_exc()
                log(f"WARNING: could not resume from {args.resume}; starting from scratch")
    ddp = DDP(model, find_unused_parameters=True) if distributed else model
    ds = SynthDataset()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    lossf = nn.CrossEntropyLoss()
    step = start
    bar = None
    if args.logstyle == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", ncols=90, mininterval=0.5)
    skipped = 0
    t0 = time.time()
    while step < args.steps:
        if sampler is not None:
            sampler.set_epoch(step)
        for x, y in dl:
            if step >= args.steps:
                break
            if args.aux_loss:
                out, aux = ddp(x, aux=True)
                loss = lossf(out, y) + 0.1 * lossf(aux, y)
            else:
                out = ddp(x)
                loss = lossf(out, y)
            if step == args.nan_step:
                loss = loss * float("nan")   # a corrupted batch (fp overflow in upstream preprocessing)
            if not torch.isfinite(loss):
                skipped += 1
                msg = f"non-finite loss ({loss.item()}) at step {step}, skipping batch (skipped so far: {skipped})"
                logger.warning(msg) if args.logstyle == "logging" else log("WARNING: " + msg)
                opt.zero_grad(); step += 1
                if bar: bar.update(1)
                continue
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            opt.step(); sched.step()
            if bar:
                bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
            elif step % 10 == 0:
                log(f"step {step}/{args.steps} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e}")
            step += 1
            time.sleep(0.05)
    if bar: bar.close()
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        torch.save({"model": model.state_dict(), "step": step}, os.path.join(args.out, "last.pt"))
    log(f"finished {step} steps in {time.time()-t0:.1f}s (skipped {skipped}); saved {args.out}/last.pt")
    if distributed:
        dist.barrier(); dist.destroy_process_group()


if __name__ == "__main__":
    main()
