"""Tiny LM trainer with periodic checkpoints and resume (single process or torchrun/DDP, gloo, CPU).

Checkpoint layout in --ckpt-dir:
  step_{N}/model.pt          model (+ scheduler, step, optional extras) saved by rank 0
  step_{N}/optim_rank{r}.pt  per-rank optimizer state (each rank saves its own)
  step_{N}/rng_rank{r}.pt    per-rank RNG state
  latest                     text file with the last complete step
"""
import argparse, os, sys, time, math, datetime, logging, random
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=40)
p.add_argument('--save-every', type=int, default=10)
p.add_argument('--ckpt-dir', default='ckpt')
p.add_argument('--resume', default=None, help="'latest', a step number, or a path to model.pt")
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--vocab', type=int, default=128)
p.add_argument('--layers', type=int, default=2)
p.add_argument('--seq', type=int, default=32)
p.add_argument('--batch', type=int, default=8)
p.add_argument('--lr', type=float, default=3e-3)
p.add_argument('--save-wrapped', action='store_true', help='save ddp_model.state_dict() (module. prefix)')
p.add_argument('--head-first', action='store_true', help='build lm head before the body (param order)')
p.add_argument('--freeze-embed', action='store_true')
p.add_argument('--extras', default='', help='comma list: args,nprng,config')
p.add_argument('--weights-only', default='default', choices=['default', 'true', 'false'])
p.add_argument('--legacy-format', action='store_true')
p.add_argument('--mmap', action='store_true')
p.add_argument('--strict', type=int, default=1)
p.add_argument('--save-whole-model', action='store_true')
p.add_argument('--log-style', default='print', choices=['print', 'logging', 'tqdm'])
p.add_argument('--pg-timeout', type=int, default=30)
args = p.parse_args()

distributed = 'RANK' in os.environ and int(os.environ.get('WORLD_SIZE', '1')) > 1
if distributed:
    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1
torch.set_num_threads(1)

if args.log_style == 'logging':
    logging.basicConfig(level=logging.INFO,
                        format=f'%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s')
log = logging.getLogger('trainer')
def info(msg, all_ranks=False):
    if rank != 0 and not all_ranks:
        return
    if args.log_style == 'logging':
        log.info(msg)
    else:
        print(f'[rank{rank}] {msg}' if distributed else msg, flush=True)


class TrainConfig:
    def __init__(self, a):
        self.hidden, self.vocab, self.layers, self.lr = a.hidden, a.vocab, a.layers, a.lr


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)
    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, layers, head_first=False):
        super().__init__()
        if head_first:
            self.head = nn.Linear(hidden, vocab)
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.zeros(1, args.seq, hidden))
        self.blocks = nn.ModuleList([Block(hidden) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        if not head_first:
            self.head = nn.Linear(hidden, vocab)
        if args.save_whole_model:
            # scale hook kept as an attribute for the export script
            self.logit_scale = lambda t: t / math.sqrt(hidden)
    def forward(self, idx):
        x = self.embed(idx) + self.pos[:, :idx.size(1)]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def batch(step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    start = torch.randint(0, args.vocab, (args.batch, 1), generator=g)
    seq = (start + torch.arange(args.seq + 1) * 3) % args.vocab
    return seq[:, :-1], seq[:, 1:]


torch.manual_seed(0)
model = TinyLM(args.vocab, args.hidden, args.layers, args.head_first)
if args.freeze_embed:
    model.embed.weight.requires_grad_(False)
nparams = sum(p.numel() for p in model.parameters())
info(f'model: TinyLM vocab={args.vocab} hidden={args.hidden} layers={args.layers} params={nparams/1e3:.1f}K world_size={world}')
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))

wo = {'default': {}, 'true': {'weights_only': True}, 'false': {'weights_only': False}}[args.weights_only]
start_step = 0
if args.resume:
    if args.resume == 'latest':
        with open(os.path.join(args.ckpt_dir, 'latest')) as f:
            s = int(f.read().strip())
        path = os.path.join(args.ckpt_dir, f'step_{s}', 'model.pt')
    elif args.resume.isdigit():
        path = os.path.join(args.ckpt_dir, f'step_{args.resume}', 'model.pt')
    else:
        path = args.resume
    d = os.path.dirname(path)
    info(f'resuming from {path}', all_ranks=True)
    ckpt = torch.load(path, map_location='cpu', mmap=args.mmap or None, **wo)
    res = model.load_state_dict(ckpt['model'], strict=bool(args.strict))
    if not args.strict:
        info(f'load_state_dict(strict=False): {res}')
    start_step = ckpt['step']
    sched.load_state_dict(ckpt['sched'])
    optim_sd = torch.load(os.path.join(d, f'optim_rank{rank}.pt'), map_location='cpu', **wo)
    opt.load_state_dict(optim_sd)
    rng = torch.load(os.path.join(d, f'rng_rank{rank}.pt'), map_location='cpu', **wo)
    torch.set_rng_state(rng['torch'])
    info(f'restored step {start_step}, lr={sched.get_last_lr()[0]:.2e}', all_ranks=True)

if distributed:
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp_model = DDP(model)
else:
    ddp_model = model


def save(step):
    d = os.path.join(args.ckpt_dir, f'step_{step}')
    os.makedirs(d, exist_ok=True)
    kw = {'_use_new_zipfile_serialization': False} if args.legacy_format else {}
    if rank == 0:
        sd = ddp_model.state_dict() if args.save_wrapped else model.state_dict()
        obj = {'model': sd, 'sched': sched.state_dict(), 'step': step}
        ex = [e for e in args.extras.split(',') if e]
        if 'args' in ex:
            obj['args'] = args
        if 'nprng' in ex:
            obj['np_rng'] = np.random.get_state()
        if 'config' in ex:
            obj['config'] = TrainConfig(args)
        torch.save(obj, os.path.join(d, 'model.pt'), **kw)
        if args.save_whole_model:
            torch.save(model, os.path.join(d, 'model_full.pt'))
    torch.save(opt.state_dict(), os.path.join(d, f'optim_rank{rank}.pt'), **kw)
    torch.save({'torch': torch.get_rng_state()}, os.path.join(d, f'rng_rank{rank}.pt'), **kw)
    if distributed:
        dist.barrier()
    if rank == 0:
        with open(os.path.join(args.ckpt_dir, 'latest'), 'w') as f:
            f.write(str(step))
    info(f'saved checkpoint {d}')


it = range(start_step, args.steps)
if args.log_style == 'tqdm' and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc='train', initial=start_step, total=args.steps, dynamic_ncols=False, ncols=90)
t0 = time.time()
for step in it:
    x, y = batch(step)
    logits = ddp_model(x)
    if hasattr(model, 'logit_scale'):
        logits = logits * 1.0
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if (step + 1) % 5 == 0:
        l = loss.detach()
        if distributed:
            dist.all_reduce(l); l /= world
        msg = f'step {step+1}/{args.steps} loss {l.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e} {(time.time()-t0)/(step+1-start_step)*1000:.0f}ms/step'
        if args.log_style == 'tqdm' and rank == 0:
            it.write(msg)
        else:
            info(msg)
    if (step + 1) % args.save_every == 0:
        save(step + 1)

info('training finished')
if distributed:
    dist.destroy_process_group()
