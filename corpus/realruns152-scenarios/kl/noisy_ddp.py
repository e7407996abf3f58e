"""Small DDP regression/classification trainer with noisy-but-healthy behaviours and a few real faults.
--fault selects a behaviour; --frank / --fstep choose the rank and step where it happens."""
import argparse, os, sys, math, time, json, logging, warnings, datetime
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--frank', type=int, default=1)
p.add_argument('--fstep', type=int, default=6)
p.add_argument('--steps', type=int, default=20)
p.add_argument('--epochs', type=int, default=1)
p.add_argument('--bs', type=int, default=16)
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--lr', type=float, default=1e-2)
p.add_argument('--workers', type=int, default=0)
p.add_argument('--ckdir', default='ckpt')
p.add_argument('--resume', default='')
p.add_argument('--use-tqdm', action='store_true')
p.add_argument('--tslog', action='store_true')
p.add_argument('--spawn', type=int, default=0)
p.add_argument('--port', type=int, default=48700)
p.add_argument('--pg-timeout', type=int, default=30)
p.add_argument('--item-delay', type=float, default=0.0)
p.add_argument('--whiten', action='store_true')
args = p.parse_args()

class Whiten(nn.Module):
    """ZCA-style whitening of a batch using a Cholesky factor of the batch covariance."""
    def forward(self, x):
        xc = x - x.mean(0, keepdim=True)
        cov = xc.T @ xc / (x.shape[0] - 1)
        L = torch.linalg.cholesky(cov)
        return torch.linalg.solve_triangular(L, xc.T, upper=False).T

class Net(nn.Module):
    def __init__(self, d_in=16, h=64, whiten=False):
        super().__init__()
        self.pre = Whiten() if whiten else nn.Identity()
        self.body = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        self.head = nn.Linear(h, 1)
    def forward(self, x):
        return self.head(self.body(self.pre(x)))

class Shards(Dataset):
    """Reads samples from a generated tensor; a 'bad record' list is applied inside the worker."""
    def __init__(self, n, rank, fault, fstep, bs):
        g = torch.Generator().manual_seed(1234)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g))
        self.rank, self.fault, self.fstep, self.bs = rank, fault, fstep, bs
        self.meta = [{'id': i, 'weight': '1.0'} for i in range(n)]
        if fault == 'worker-valueerror':
            for i in range(n // 2, n): self.meta[i]['weight'] = '1.O'   # typo'd record in the second half
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        if args.item_delay: time.sleep(args.item_delay)
        w = float(self.meta[i]['weight'])
        return self.x[i] * w, self.y[i]

def setup_logging(rank):
    if args.tslog:
        logging.basicConfig(level=logging.INFO, format=f'%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s', stream=sys.stdout)
    else:
        logging.basicConfig(level=logging.INFO, format=f'[rank{rank}] %(levelname)s %(message)s', stream=sys.stdout)
    return logging.getLogger('trainer')

def save_ckpt(log, model, opt, step, rank):
    if rank != 0: return
    path = os.path.join(args.ckdir, f'step_{step:05d}.pt')
    for attempt in range(1, 4):
        try:
            torch.save({'model': model.module.state_dict(), 'opt': opt.state_dict(), 'step': step}, path)
            log.info('saved checkpoint %s', path)
            return
        except (OSError, RuntimeError):
            if args.fault != 'ckpt-retry':
                raise
            log.exception('checkpoint save failed (attempt %d/3); will create %s and retry', attempt, args.ckdir)
            time.sleep(0.5)
            os.makedirs(args.ckdir, exist_ok=True)
    raise RuntimeError('could not save checkpoint')

def evaluate(log, model, rank, step):
    model.eval()
    g = torch.Generator().manual_seed(99)
    xv = torch.randn(64, 16, generator=g); yv = xv[:, :4].sum(1, keepdim=True)
    with torch.no_grad():
        mse = nn.functional.mse_loss(model(xv), yv).item()
    model.train()
    try:
        if args.fault == 'eval-overflow' and rank == args.frank:
            # 'perplexity'-style metric from an un-normalised sum of losses
            ppl = math.exp(mse * 1e4)
        else:
            ppl = math.exp(min(mse, 50))
        log.info('eval step=%d mse=%.4f ppl=%.3f', step, mse, ppl)
    except Exception:
        log.exception('evaluation metric failed at step %d; skipping eval and continuing training', step)

def main(rank=None, world=None):
    if rank is None:
        rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
    else:
        os.environ.setdefault('MASTER_ADDR', '127.0.0.1'); os.environ.setdefault('MASTER_PORT', str(args.port))
    log = setup_logging(rank)
    if args.fault != 'ckpt-retry' and rank == 0 and not args.ckdir.startswith('/ro'):
        os.makedirs(args.ckdir, exist_ok=True)
    dist.init_process_group('gloo', rank=rank, world_size=world, timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = Net(h=args.hidden, whiten=args.whiten)
    if args.resume:
        log.info('resuming from %s', args.resume)
        ck = torch.load(args.resume, map_location='cpu')
        model.load_state_dict(ck['model'])
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    if args.resume and 'opt' in ck:
        opt.load_state_dict(ck['opt'])
    ds = Shards(args.bs * args.steps * world, rank, args.fault, args.fstep, args.bs)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    total = args.epochs * len(dl)
    if args.fault == 'onecycle':
        # schedule length computed from the global dataset size instead of the per-rank loader
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=len(ds) // args.bs // world // 2 * args.epochs)
    else:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    if args.fault == 'deprecations':
        sched.step()   # stepping the scheduler before the first optimizer step (warns)
    log.info('world=%d steps/epoch=%d params=%d', world, len(dl), sum(p.numel() for p in model.parameters()))
    it = range(args.epochs)
    step = 0
    bar = None
    if args.use_tqdm and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=total, desc='train', dynamic_ncols=False, ncols=100, file=sys.stderr)
    for ep in it:
        sampler.set_epoch(ep)
        for x, y in dl:
            step += 1
            if args.fault in ('nan-skip', 'nan-persist') and rank == args.frank and step >= args.fstep and (args.fault == 'nan-persist' or step == args.fstep):
                x = x.clone(); x[0, 3] = float('inf')   # a corrupted feature value in this batch
            if args.fault == 'whiten-degenerate' and rank == args.frank and step == args.fstep:
                x = x.clone(); x[:, 5] = 0.0            # feature missing for this shard (filled with 0) -> singular covariance
            if args.fault == 'hist-oom' and rank == args.frank and step == args.fstep:
                # debug histogram of pairwise distances over the whole shard
                full = ds.x
                pair = torch.cdist(full.repeat(40, 1), full.repeat(40, 1))
                log.info('pairwise mean %.3f', pair.mean().item())
            out = model(x)
            if args.fault == 'deprecations':
                loss = nn.functional.mse_loss(out, y.squeeze(1))   # broadcasts (warns)
            else:
                loss = nn.functional.mse_loss(out, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if args.fault in ('nan-skip',) and not torch.isfinite(gn):
                log.warning('non-finite gradient norm %s at step %d (loss=%s); skipping optimizer step', gn.item(), step, loss.item())
                opt.zero_grad(set_to_none=True)
                sched.step()
                continue
            opt.step(); sched.step()
            lt = loss.detach().clone(); dist.all_reduce(lt); lt /= world
            if args.fault == 'nan-persist' and not torch.isfinite(lt):
                log.error('step %d: loss is %s (grad_norm=%s)', step, lt.item(), gn.item())
                if step >= args.fstep + 4:
                    log.error('loss has been non-finite for 5 consecutive steps; aborting training')
                    dist.destroy_process_group(); sys.exit(1)
                continue
            if bar is not None:
                bar.update(1); bar.set_postfix(loss=f'{lt.item():.4f}', lr=f'{sched.get_last_lr()[0]:.2e}')
            elif rank == 0 and step % 4 == 0:
                log.info('epoch %d step %d loss %.4f lr %.2e grad_norm %.3f', ep, step, lt.item(), sched.get_last_lr()[0], gn.item())
            if step % 10 == 0:
                if args.fault in ('eval-overflow',):
                    evaluate(log, model, rank, step)
                save_ckpt(log, model, opt, step, rank)
    if bar is not None: bar.close()
    dist.barrier()
    log.info('training finished after %d steps', step)
    dist.destroy_process_group()

if __name__ == '__main__':
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
