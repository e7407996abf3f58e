"""Small DDP text-classifier training loop over per-rank shards (gloo, CPU).

Each rank streams its own shard folder DIR/rank{r}/chunk*.npz, so a defect in one shard
only hits one rank, deep into training. Faults come from the data (see gl_prep.py), from the
environment (ulimits set by gl_rankwrap.sh, read-only dirs, held locks, outside signals) or
from a code path selected with --bug.
"""
import argparse, os, sys, time, json, math, logging, warnings, sqlite3
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--data-dir', default='/work/rr116/gl/data/clean')
p.add_argument('--steps', type=int, default=60)
p.add_argument('--batch', type=int, default=16)
p.add_argument('--seq', type=int, default=32)
p.add_argument('--vocab', type=int, default=256)
p.add_argument('--classes', type=int, default=10)
p.add_argument('--dim', type=int, default=32)
p.add_argument('--lr', type=float, default=1e-3)
p.add_argument('--fmt', choices=['print', 'logging', 'tqdm'], default='print')
p.add_argument('--pg-timeout', type=int, default=25)
p.add_argument('--step-sleep', type=float, default=0.05)
p.add_argument('--ckpt-dir', default='')
p.add_argument('--ckpt-every', type=int, default=0)
p.add_argument('--metrics-db', default='')
p.add_argument('--metrics-every', type=int, default=10)
p.add_argument('--sync-hist-every', type=int, default=0, help='all_reduce a label histogram every N steps')
p.add_argument('--eval-every', type=int, default=0)
p.add_argument('--eval-size', type=int, default=4000)
p.add_argument('--cache-lock', default='', help='build a shared token-count cache under a file lock')
p.add_argument('--cache-at-step', type=int, default=30)
p.add_argument('--aux-weight', type=float, default=0.0, help='>0 enables the aux head (DDP)')
p.add_argument('--keep-open', action='store_true', help='keep shard handles open (cache)')
p.add_argument('--workers', type=int, default=0)
p.add_argument('--progress-dir', default='')
p.add_argument('--find-unused', action='store_true')
p.add_argument('--spawn', type=int, default=0, help='start N ranks with torch.multiprocessing.spawn')
p.add_argument('--port', type=int, default=44900)
p.add_argument('--noisy', action='store_true', help='extra warnings typical of real runs')
args = p.parse_args()


class ShardStream(torch.utils.data.IterableDataset):
    """Streams DIR/rank{r}/chunk*.npz in order, yields whole batches."""

    def __init__(self, root, rank, batch, keep_open=False):
        self.dir = os.path.join(root, f'rank{rank}')
        self.batch = batch
        self.keep_open = keep_open
        self._open = []

    def chunks(self):
        n = len([f for f in os.listdir(self.dir) if f.endswith('.npz')]) if os.path.isdir(self.dir) else 16
        return [os.path.join(self.dir, f'chunk{c:03d}.npz') for c in range(max(n, 16))]

    def __iter__(self):
        while True:
            for path in self.chunks():
                z = np.load(path)
                if self.keep_open:
                    self._open.append(z)  # cached for the re-weighting pass
                d = {k: z[k] for k in z.files}
                if not self.keep_open:
                    z.close()
                n = len(d['labels'])
                for i in range(0, n, self.batch):
                    yield {k: torch.from_numpy(v[i:i + self.batch]) for k, v in d.items()}


class Classifier(nn.Module):
    def __init__(self, vocab, seq, dim, classes, aux=False):
        super().__init__()
        self.batch = args.batch
        self.emb = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(seq * dim, classes)
        self.aux = nn.Linear(dim, 4) if aux else None

    def forward(self, tokens):
        h = self.norm(self.emb(tokens))
        logits = self.head(h.reshape(self.batch, -1))
        aux = self.aux(h.mean(1)) if self.aux is not None else None
        return logits, aux


def run(rank, world):
    distributed = world > 1
    if distributed:
        dist.init_process_group('gloo', rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if args.fmt == 'logging':
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format=f'%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s')
    log = logging.getLogger('train')

    def say(msg, level=logging.INFO):
        if args.fmt == 'logging':
            log.log(level, msg)
        else:
            print(f'[rank{rank}] {msg}', flush=True)

    if args.progress_dir:
        os.makedirs(args.progress_dir, exist_ok=True)

    def progress(step):
        if args.progress_dir:
            with open(f'{args.progress_dir}/rank{rank}.json.tmp', 'w') as f:
                json.dump({'pid': os.getpid(), 'step': step}, f)
            os.replace(f'{args.progress_dir}/rank{rank}.json.tmp', f'{args.progress_dir}/rank{rank}.json')

    say(f'world={world} pid={os.getpid()} data={args.data_dir}/rank{rank} torch={torch.__version__}')
    model = Classifier(args.vocab, args.seq, args.dim, args.classes, aux=args.aux_weight > 0)
    if distributed:
        model = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.noisy:
        sched.step()  # warm-start the schedule (a common mistake; torch warns about it)
        opt.zero_grad()
    ds = ShardStream(args.data_dir, rank, args.batch, keep_open=args.keep_open)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=args.workers,
                                         persistent_workers=args.workers > 0)
    it = iter(loader)
    seen = []
    bar = None
    if args.fmt == 'tqdm' and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc='train', dynamic_ncols=False, ncols=100, mininterval=0.5)
    t0 = time.time()
    for step in range(1, args.steps + 1):
        progress(step)
        batch = next(it)
        tokens, labels, weight = batch['tokens'], batch['labels'], batch['weight']
        if args.noisy and step == 1:
            labels = torch.tensor(labels)  # torch warns about copy-constructing from a tensor
        assert int(labels.max()) < args.classes, \
            f'label {int(labels.max())} out of range for {args.classes} classes'
        seen.append(labels)
        logits, aux = model(tokens)
        ce = F.cross_entropy(logits, labels, reduction='none')
        loss = (ce * weight).sum() / weight.sum()
        if aux is not None and 'aux' in batch:
            loss = loss + args.aux_weight * F.cross_entropy(aux, batch['aux'])
        if not torch.isfinite(loss):
            raise FloatingPointError(f'Loss became infinite or NaN at iteration={step}! loss_dict = {{"loss_cls": {loss.item()}}}')
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if args.noisy and gn > 2.5 and rank == step % max(world, 1):
            say(f'WARNING grad norm {gn:.2f} above clip threshold 1.0, clipped', logging.WARNING)
        if args.sync_hist_every and step % args.sync_hist_every == 0 and distributed:
            hist = torch.bincount(torch.cat(seen))
            dist.all_reduce(hist)
            say(f'label histogram (global) {hist.tolist()}')
        if args.eval_every and step % args.eval_every == 0:
            with torch.no_grad():
                m = model.module if distributed else model
                g = torch.Generator().manual_seed(step)
                ev = torch.randint(0, args.vocab, (args.eval_size, args.seq), generator=g)
                feats = m.norm(m.emb(ev)).mean(1)
                sim = feats @ feats.T  # pairwise similarity for the retrieval metric
                top = sim.topk(5, dim=1).indices
                say(f'eval step {step}: retrieval@5 diag={float((top[:, 0] == torch.arange(len(ev))).float().mean()):.3f} sim_mb={sim.numel() * 4 / 2**20:.0f}')
            if distributed:
                dist.barrier()
        if args.cache_lock and step == args.cache_at_step and int(os.environ.get('LOCAL_RANK', 0)) == 0:
            from filelock import FileLock
            cache = args.cache_lock.format(node=os.environ.get('GROUP_RANK', 0))  # node-local cache
            say(f'building token-count cache {cache}')
            with FileLock(cache + '.lock', timeout=8):
                counts = np.bincount(torch.cat(seen).numpy(), minlength=args.classes)
                np.save(cache, counts)
        if args.metrics_db and rank == 0 and step % args.metrics_every == 0:
            con = sqlite3.connect(args.metrics_db, timeout=3)
            con.execute('CREATE TABLE IF NOT EXISTS metrics (step INTEGER, loss REAL, lr REAL, t REAL)')
            con.execute('INSERT INTO metrics VALUES (?,?,?,?)', (step, float(loss), sched.get_last_lr()[0], time.time()))
            con.commit()
            con.close()
        if args.ckpt_dir and args.ckpt_every and step % args.ckpt_every == 0:
            if rank == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                path = os.path.join(args.ckpt_dir, f'step{step:05d}.pt')
                with open(path, 'wb') as f:
                    torch.save({'model': model.state_dict(), 'opt': opt.state_dict(), 'step': step}, f)
                say(f'saved checkpoint {path}')
            if distributed:
                dist.barrier()
        dt = time.time() - t0
        if bar is not None:
            bar.set_postfix(loss=f'{loss.item():.4f}')
            bar.update(1)
        else:
            say(f'step {step}/{args.steps} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} '
                f'grad_norm {gn:.3f} samples/s {step * args.batch / dt:.0f}')
        time.sleep(args.step_sleep)
    if bar is not None:
        bar.close()
    if distributed:
        dist.barrier()
    say(f'training done, {args.steps} steps in {time.time() - t0:.1f}s')
    if distributed:
        dist.destroy_process_group()


def spawn_main(rank, world):
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(args.port)
    run(rank, world)


if __name__ == '__main__':
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(spawn_main, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(int(os.environ.get('RANK', 0)), int(os.environ.get('WORLD_SIZE', 1)))
