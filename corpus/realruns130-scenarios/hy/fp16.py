"""fp16 training with fp32 master weights and a dynamic loss scaler (fairseq / DeepSpeed style),
plus a tiny self-attention classifier for the masked_fill case and a torch.amp.GradScaler path.

--fault none       healthy (with --init-scale high, a few overflow skips at the start)
--fault unscaled   the shard on --fault-rank was never standardised (x*--feat-scale): fp16 activations
                   overflow on every step of that rank
--fault maskfill   attention padding mask filled with -1e9 in a half tensor
--fault ampscaler  model.half() + torch.amp.GradScaler (loss scaling of fp16 parameters)
"""
import argparse, os, sys, math, time, logging, socket
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=1)
p.add_argument('--fault-step', type=int, default=1)
p.add_argument('--feat-scale', type=float, default=400.0)
p.add_argument('--style', default='fairseq')  # fairseq | ds
p.add_argument('--init-scale', type=float, default=128.0)
p.add_argument('--min-scale', type=float, default=1e-4)
p.add_argument('--scale-window', type=int, default=20)
p.add_argument('--steps', type=int, default=60)
p.add_argument('--lr', type=float, default=1e-3)
p.add_argument('--every', type=int, default=5)
p.add_argument('--bsz', type=int, default=32)
p.add_argument('--grad-boost', type=float, default=1.0)
args = p.parse_args()

rank = int(os.environ.get('RANK', 0))
world = int(os.environ.get('WORLD_SIZE', 1))
logging.basicConfig(level=logging.INFO, format='%(asctime)s | %(levelname)s | %(name)s | %(message)s',
                    datefmt='%Y-%m-%d %H:%M:%S', stream=sys.stdout)
if args.style == 'ds':
    logging.basicConfig(force=True, level=logging.INFO,
                        format='[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s', stream=sys.stdout)
log = logging.getLogger('fairseq.trainer')
ilog = logging.getLogger('train_inner')


class Attn(nn.Module):
    def __init__(self, d=32, ncls=4, vocab=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.out = nn.Linear(d, ncls)

    def forward(self, tok, pad_mask):
        h = self.emb(tok)
        s = self.q(h) @ self.k(h).transpose(1, 2) / math.sqrt(h.shape[-1])
        s = s.masked_fill(pad_mask[:, None, :], -1e9)
        a = torch.softmax(s.float(), -1).type_as(s)
        return self.out((a @ self.v(h)).mean(1))


def mlp():
    return nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def main():
    if world > 1:
        dist.init_process_group('gloo', timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(100 + rank)
    if args.fault == 'maskfill':
        model = Attn().half()
    else:
        model = mlp().half()
    if world > 1:
        for p_ in model.parameters():
            dist.broadcast(p_.data, 0)
    if rank == 0:
        print(f'| distributed init (rank {rank}): world_size={world} backend=gloo', flush=True)
        print(f'| model {model.__class__.__name__}, dtype={next(model.parameters()).dtype}, '
              f'num. model params: {sum(p.numel() for p in model.parameters())}', flush=True)
    if args.fault == 'ampscaler':
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
        scaler = torch.amp.GradScaler('cpu')
        for step in range(1, args.steps + 1):
            x = torch.randn(args.bsz, 32, generator=g).half()
            y = torch.randint(0, 10, (args.bsz,), generator=g)
            with torch.autocast('cpu', dtype=torch.float16):
                loss = F.cross_entropy(model(x).float(), y)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            if step % args.every == 0:
                log.info(f'step={step} loss={loss.item():.4f} scale={scaler.get_scale():.1f}')
        return
    master = [p_.detach().clone().float().requires_grad_(True) for p_ in model.parameters()]
    opt = torch.optim.AdamW(master, lr=args.lr)
    scale = args.init_scale
    since_overflow = 0
    skipped = 0
    t0 = time.time()
    W = torch.randn(32, 10, generator=torch.Generator().manual_seed(5))
    for step in range(1, args.steps + 1):
        if args.fault == 'maskfill':
            tok = torch.randint(1, 64, (args.bsz, 12), generator=g)
            lens = torch.randint(4, 13, (args.bsz,), generator=g)
            pad = torch.arange(12)[None, :] >= lens[:, None]
            tok[pad] = 0
            y = tok[:, 0] % 4
            out = model(tok, pad)
        else:
            x = torch.randn(args.bsz, 32, generator=g)
            y = (x @ W).argmax(-1)
            if args.fault == 'unscaled' and rank == args.fault_rank and step >= args.fault_step:
                x = x * args.feat_scale + args.feat_scale
            out = model(x.half())
        loss = F.cross_entropy(out.float(), y)
        for p_ in model.parameters():
            p_.grad = None
        (loss * scale * args.grad_boost).backward()
        grads = [p_.grad.float() for p_ in model.parameters()]
        gn = torch.norm(torch.stack([g_.norm() for g_ in grads]))
        overflow = torch.tensor([0.0 if math.isfinite(gn.item()) else 1.0])
        if world > 1:
            dist.all_reduce(overflow, op=dist.ReduceOp.MAX)
        if overflow.item() > 0:
            prev = scale
            scale = scale / 2.0
            since_overflow = 0
            skipped += 1
            if args.style == 'ds':
                log.info(f'[deepspeed] OVERFLOW! Rank {rank} Skipping step. Attempted loss scale: {prev:g}, reducing to {scale:g}')
                if prev <= args.min_scale:
                    raise Exception('Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.')
            else:
                if scale < args.min_scale:
                    raise FloatingPointError(
                        'Minimum loss scale reached ({}). Your loss is probably exploding. Try lowering the learning rate, '
                        'using gradient clipping or increasing the batch size.'.format(args.min_scale))
                log.info(f'NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: {scale}')
            continue
        if world > 1:
            for g_ in grads:
                dist.all_reduce(g_)
                g_.div_(world)
        for m, g_ in zip(master, grads):
            m.grad = g_ / (scale * args.grad_boost)
        gnorm = torch.nn.utils.clip_grad_norm_(master, 5.0)
        opt.step()
        with torch.no_grad():
            for p_, m in zip(model.parameters(), master):
                p_.copy_(m.half())
        since_overflow += 1
        if since_overflow % args.scale_window == 0:
            scale *= 2.0
        lv = loss.detach().clone()
        if world > 1:
            dist.all_reduce(lv)
            lv /= world
        if rank == 0 and step % args.every == 0:
            if args.style == 'ds':
                log.info(f'step={step}, skipped={skipped}, lr=[{args.lr}], mom=[(0.9, 0.999)]')
                print(f'steps: {step} loss: {lv.item():.4f} iter time (s): {(time.time() - t0) / step:.3f} samples/sec: {args.bsz * world * step / (time.time() - t0):.3f}', flush=True)
            else:
                ilog.info(f'epoch 001:{step:7d} / {args.steps} loss={lv.item() / math.log(2):.3f}, ppl={2 ** min(lv.item() / math.log(2), 1000):.2f}, '
                          f'wps=0, ups=0, wpb={args.bsz * world}, bsz={args.bsz * world}, num_updates={step}, lr={args.lr}, gnorm={gnorm.item():.3f}, '
                          f'loss_scale={scale:g}, train_wall=0, gb_free=na, wall={time.time() - t0:.0f}')
    if rank == 0:
        print(f'done training in {time.time() - t0:.1f} seconds', flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == '__main__':
    main()
