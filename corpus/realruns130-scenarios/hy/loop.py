"""Custom DDP training loop on a small tabular multi-task model, with several metric-print styles.

Faults (--fault):
  none      healthy
  unscaled  one record on --fault-rank at --fault-step was not standardised (feature x1000); with the
            hand-written BCE (--loss bce-manual) sigmoid saturates to exactly 1.0 and log(1-p) = log(0)
  emptymask at --fault-step the batch on --fault-rank has every label missing (-1), the weighted mean
            divides 0 by 0 (--loss masked-mean)
  spikes    a few batches on --fault-rank carry shuffled labels (noisy shard), loss spikes and recovers
  lrzero    scheduler length computed with a double division, lr decays to 0 after a few steps
  noddp     the DDP wrapper is created but the loop trains the bare module
Learning-rate problems are induced by the flags --lr / --peak-lr / --opt alone.
"""
import argparse, os, sys, math, json, time, logging, socket
from datetime import timedelta, datetime
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=1)
p.add_argument('--fault-step', type=int, default=20)
p.add_argument('--fmt', default='kv')
p.add_argument('--guard', default='none')
p.add_argument('--loss', default='ce')
p.add_argument('--steps', type=int, default=60)
p.add_argument('--lr', type=float, default=1e-3)
p.add_argument('--peak-lr', type=float, default=0.0)
p.add_argument('--warmup', type=int, default=0)
p.add_argument('--opt', default='adam')
p.add_argument('--clip', type=float, default=0.0)
p.add_argument('--launch', default='env')
p.add_argument('--nprocs', type=int, default=2)
p.add_argument('--port', type=int, default=46220)
p.add_argument('--every', type=int, default=5)
p.add_argument('--seed', type=int, default=1234)
p.add_argument('--bsz', type=int, default=32)
p.add_argument('--sleep', type=float, default=0.02)
p.add_argument('--spe', type=int, default=10, help='steps per epoch')
p.add_argument('--sched-first', action='store_true')
p.add_argument('--fup', action='store_true')
p.add_argument('--hard', action='store_true', help='labels mostly noise (plateau)')
args = p.parse_args()

NF, NC = 32, 10


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(NF, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU())
        self.cls = nn.Linear(128, NC)
        self.aux = nn.Linear(128, 1)

    def forward(self, x):
        h = self.body(x)
        return self.cls(h), self.aux(h).squeeze(-1)


def make_shard(rank, n, hard=False):
    g = torch.Generator().manual_seed(99)
    W = torch.randn(NF, NC, generator=g)
    v = torch.randn(NF, generator=g)
    g2 = torch.Generator().manual_seed(1000 + rank)
    X = torch.randn(n, NF, generator=g2)
    y = (X @ W + 0.5 * torch.randn(n, NC, generator=g2)).argmax(-1)
    if hard:
        flip = torch.rand(n, generator=g2) < 0.85
        y[flip] = torch.randint(0, NC, (int(flip.sum()),), generator=g2)
    b = ((X @ v) > 0).float()
    return X, y, b, X @ v


def compute_loss(logits, aux, y, b, r=None):
    if args.loss == 'ce':
        return F.cross_entropy(logits, y) + F.binary_cross_entropy_with_logits(aux, b)
    if args.loss == 'bce-manual':
        pr = torch.sigmoid(aux)
        bce = -(b * torch.log(pr) + (1 - b) * torch.log(1 - pr)).mean()
        return F.cross_entropy(logits, y) + bce
    if args.loss == 'masked-mean':
        w = (y >= 0).float()
        ce = F.cross_entropy(logits, y.clamp(min=0), reduction='none')
        return (ce * w).sum() / w.sum() + F.binary_cross_entropy_with_logits(aux, b)
    if args.loss == 'mse':
        return F.cross_entropy(logits, y) + F.mse_loss(aux, r)
    if args.loss == 'nll-probs':
        probs = F.softmax(logits, dim=-1)
        return F.nll_loss(probs, y) + F.binary_cross_entropy_with_logits(aux, b)
    raise SystemExit('unknown loss')


def main(rank, world):
    dist_on = world > 1
    if dist_on:
        dist.init_process_group('gloo', rank=rank, world_size=world, timeout=timedelta(seconds=30))
    host = socket.gethostname()
    log = logging.getLogger('train')
    if args.fmt == 'kv':
        logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(name)s: %(message)s', stream=sys.stdout)
    elif args.fmt == 'fairseq':
        logging.basicConfig(level=logging.INFO, format='%(asctime)s | %(levelname)s | %(name)s | %(message)s',
                            datefmt='%Y-%m-%d %H:%M:%S', stream=sys.stdout)
    else:
        logging.basicConfig(level=logging.INFO, format='[%(levelname)s] %(message)s', stream=sys.stdout)
    torch.manual_seed(args.seed)
    model = Net()
    if args.guard == 'megatron' or not dist_on:
        net = model
    else:
        net = DDP(model, find_unused_parameters=args.fup)
    train_model = net
    if args.fault == 'noddp':
        ddp_model = DDP(model)  # wrapper built ...
        train_model = model     # ... but the loop keeps using the bare module
    n = args.steps * args.bsz
    X, y, b, R = make_shard(rank, n, hard=args.hard)
    Xv, yv, bv, Rv = make_shard(500 + rank, 512, hard=args.hard)
    if args.opt == 'sgd':
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    total = args.steps
    if args.fault == 'lrzero':
        # number of optimisation steps for the decay (bug: len(loader) is already in batches)
        loader_len = n // args.bsz
        num_training_steps = (args.steps // args.spe) * loader_len // args.bsz
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: max(0.0, (num_training_steps - s) / max(1, num_training_steps)))
    elif args.peak_lr > 0:
        peak = args.peak_lr / args.lr
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: peak * min(1.0, (s + 1) / max(1, args.warmup)))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    if rank == 0:
        nparam = sum(p.numel() for p in model.parameters())
        print(f'model: {model.__class__.__name__} params={nparam} world_size={world} optimizer={opt.__class__.__name__} '
              f'lr={args.lr} loss={args.loss} steps={args.steps}', flush=True)
    bar = None
    if args.fmt == 'tqdm' and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc='train', mininterval=0, dynamic_ncols=False, ncols=110)
    t0 = time.time()
    best = float('inf')
    ep_loss, ep_acc, ep_n = 0.0, 0.0, 0
    g = torch.Generator().manual_seed(7 + rank)
    skipped = 0
    nan_iters = 0
    if args.sched_first:
        sched.step()  # resume-style fast-forward of the scheduler before the first optimizer step
    for step in range(1, args.steps + 1):
        i0 = (step - 1) * args.bsz
        xb, yb, bb, rb = X[i0:i0 + args.bsz].clone(), y[i0:i0 + args.bsz].clone(), b[i0:i0 + args.bsz].clone(), R[i0:i0 + args.bsz].clone()
        if rank == args.fault_rank:
            if args.fault == 'unscaled' and step == args.fault_step:
                xb[3] = xb[3] * 1000.0 + 250.0
            if args.fault == 'emptymask' and step == args.fault_step:
                yb[:] = -1
            if args.fault == 'spikes' and step in (args.fault_step, args.fault_step + 17):
                yb = torch.randint(0, NC, yb.shape, generator=g)
                xb = xb * 6.0
        train_model.train()
        logits, aux = train_model(xb)
        loss = compute_loss(logits, aux, yb, bb, rb)
        if args.guard == 'nan' and not math.isfinite(loss.item()):
            print(f'Loss is {loss.item()}, stopping training', flush=True)
            sys.exit(1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.guard == 'megatron':
            gn = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))
            assert not gn.isnan().item(), (
                f'Rank {rank}: found NaN in local grad norm in backward pass before data-parallel '
                f'communication collective. Device: cpu, node: {host}')
            if dist_on:
                for p_ in model.parameters():
                    dist.all_reduce(p_.grad)
                    p_.grad.div_(world)
        if args.clip > 0:
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        else:
            gnorm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters()]))
        opt.step()
        lr_now = sched.get_last_lr()[0]
        sched.step()
        lval = loss.detach().clone()
        acc = (logits.argmax(-1) == yb).float().mean()
        if dist_on and args.fault != 'noddp' and args.fmt != 'kv':
            dist.all_reduce(lval)
            lval /= world
            dist.all_reduce(acc)
            acc /= world
        L = lval.item()
        if not math.isfinite(L):
            nan_iters += 1
        if math.isfinite(L):
            best = min(best, L)
        if args.guard == 'diverge' and math.isfinite(best) and L > 50 * best and step > 10:
            if rank == 0:
                print(f'ERROR: training diverged at step {step}: loss {L:.4e} > 50 x best loss {best:.4e}; aborting', flush=True)
            sys.exit(3)
        ep_loss += L; ep_acc += acc.item(); ep_n += 1
        time.sleep(args.sleep)
        if args.fmt == 'kv':
            if step % args.every == 0 or step == 1:
                log.info(f'rank={rank} step={step} loss={L:.4f} acc={acc.item():.3f} lr={lr_now:.3e} grad_norm={gnorm.item():.4f}')
        elif rank == 0:
            if args.fmt == 'megatron' and (step % args.every == 0):
                el = (time.time() - t0) * 1000 / step
                ts = datetime.now().strftime('%Y-%m-%d %H:%M:%S')
                print(f' [{ts}] iteration {step:8d}/{args.steps:8d} | consumed samples: {step * args.bsz * world:12d} | '
                      f'elapsed time per iteration (ms): {el:.1f} | learning rate: {lr_now:.6E} | global batch size: {args.bsz * world:5d} | '
                      f'lm loss: {L:.6E} | loss scale: 1.0 | grad norm: {gnorm.item():.3f} | '
                      f'number of skipped iterations: {skipped:3d} | number of nan iterations: {nan_iters:3d} |', flush=True)
            elif args.fmt == 'jsonl' and step % args.every == 0:
                print(json.dumps({'step': step, 'epoch': round(step / args.spe, 2), 'loss': L if math.isfinite(L) else str(L),
                                  'acc': round(acc.item(), 4), 'lr': lr_now, 'grad_norm': gnorm.item() if math.isfinite(gnorm.item()) else str(gnorm.item()),
                                  'time': round(time.time() - t0, 2)}), flush=True)
            elif args.fmt == 'tqdm':
                bar.set_postfix(loss=f'{L:.4f}', lr=f'{lr_now:.2e}', gnorm=f'{gnorm.item():.2f}')
                bar.update(1)
            elif args.fmt == 'fairseq' and step % args.every == 0:
                ep = (step - 1) // args.spe + 1
                log.name = 'train_inner'
                logging.getLogger('fairseq.trainer').name
                logging.getLogger('train_inner').info(
                    f'epoch {ep:03d}:{(step - 1) % args.spe + 1:7d} / {args.spe} loss={L:.3f}, nll_loss={L / math.log(2) if math.isfinite(L) else L:.3f}, '
                    f'ppl={2 ** min(L / math.log(2), 1000) if math.isfinite(L) else L:.2f}, wps={args.bsz * world / max(1e-3, args.sleep):.0f}, ups={1 / max(1e-3, args.sleep):.2f}, '
                    f'wpb={args.bsz * world}, bsz={args.bsz * world}, num_updates={step}, lr={lr_now:.5g}, gnorm={gnorm.item():.3f}, '
                    f'clip={100 if args.clip and gnorm.item() > args.clip else 0}, train_wall=0, gb_free=na, wall={time.time() - t0:.0f}')
        if step % args.spe == 0:
            ep = step // args.spe
            with torch.no_grad():
                lv, av = train_model(Xv)
                vl = F.cross_entropy(lv, yv).item()
                va = (lv.argmax(-1) == yv).float().mean().item()
            if rank == 0 and args.fmt == 'keras':
                print(f'Epoch {ep}/{args.steps // args.spe}')
                print(f'{args.spe}/{args.spe} [==============================] - {time.time() - t0:.0f}s '
                      f'{1000 * (time.time() - t0) / step:.0f}ms/step - loss: {ep_loss / ep_n:.4f} - accuracy: {ep_acc / ep_n:.4f} '
                      f'- val_loss: {vl:.4f} - val_accuracy: {va:.4f} - lr: {lr_now:.4e}', flush=True)
            elif rank == 0 and args.fmt == 'fairseq':
                logging.getLogger('valid').info(f'epoch {ep:03d} | valid on \'valid\' subset | loss {vl:.3f} | nll_loss {vl / math.log(2):.3f} | '
                                                f'ppl {2 ** min(vl / math.log(2), 1000):.2f} | wps 0 | wpb {len(yv)} | bsz {len(yv)} | num_updates {step}')
            elif rank == 0 and args.fmt in ('kv', 'jsonl', 'megatron'):
                if args.fmt == 'jsonl':
                    print(json.dumps({'epoch': ep, 'eval_loss': vl if math.isfinite(vl) else str(vl), 'eval_acc': round(va, 4)}), flush=True)
                elif args.fmt == 'kv':
                    log.info(f'eval epoch={ep} val_loss={vl:.4f} val_acc={va:.3f}')
                else:
                    print('-' * 100)
                    print(f' validation loss at iteration {step} | lm loss value: {vl:.6E} | lm loss PPL: {math.exp(min(vl, 700)):.6E} |')
                    print('-' * 100, flush=True)
            ep_loss, ep_acc, ep_n = 0.0, 0.0, 0
    if bar is not None:
        bar.close()
    if args.fault == 'noddp' and dist_on:
        ck = torch.stack([p_.detach().double().sum() for p_ in model.parameters()]).sum().reshape(1)
        allck = [torch.zeros_like(ck) for _ in range(world)]
        dist.all_gather(allck, ck)
        vals = [round(t.item(), 6) for t in allck]
        if rank == 0:
            print(f'parameter checksums per rank: {vals}', flush=True)
        assert all(abs(v - vals[0]) < 1e-6 for v in vals), f'model replicas are out of sync across ranks: {vals}'
    if rank == 0:
        print(f'training finished: {args.steps} steps in {time.time() - t0:.1f}s, final loss {L:.4f}', flush=True)
    if dist_on:
        dist.barrier()
        dist.destroy_process_group()


def spawn_entry(rank, world):
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(args.port)
    main(rank, world)


if __name__ == '__main__':
    if args.launch == 'env':
        main(int(os.environ['RANK']), int(os.environ['WORLD_SIZE']))
    elif args.launch == 'spawn':
        import torch.multiprocessing as mp
        mp.spawn(spawn_entry, args=(args.nprocs,), nprocs=args.nprocs)
    else:
        main(0, 1)
