"""Tiny DDP trainer with checkpoint save/resume. Used to reproduce checkpoint/serialization failures."""
import argparse, os, sys, time, math, logging, dataclasses
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument('--workdir', default='run')
p.add_argument('--steps', type=int, default=30)
p.add_argument('--save-every', type=int, default=0)
p.add_argument('--save-dir', default='')          # may contain {rank}
p.add_argument('--save-all-ranks', action='store_true')
p.add_argument('--resume-from', default='')       # may contain {rank}
p.add_argument('--map-cpu', action='store_true')
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--vocab', type=int, default=256)
p.add_argument('--extra-norm', action='store_true')
p.add_argument('--opt-groups', type=int, default=1)
p.add_argument('--store-config-object', action='store_true')
p.add_argument('--fake-cuda-save', action='store_true')
p.add_argument('--strict-load', type=int, default=1)
p.add_argument('--use-logging', action='store_true')
p.add_argument('--progress', action='store_true')
p.add_argument('--buffered-save', action='store_true')
p.add_argument('--skip-optim-resume', action='store_true')
p.add_argument('--spawn', type=int, default=0)
p.add_argument('--port', default='46150')
p.add_argument('--sleep', type=float, default=0.05)
args = p.parse_args()

@dataclasses.dataclass
class TrainConfig:
    hidden: int
    vocab: int
    lr: float = 3e-3
    warmup: int = 5

class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, extra_norm=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(), nn.Linear(4 * hidden, hidden)) for _ in range(2)])
        if extra_norm:
            self.final_norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)
    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = h + b(h)
        if hasattr(self, 'final_norm'):
            h = self.final_norm(h)
        return self.head(h)

def setup_log(rank):
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f'%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s')
        lg = logging.getLogger('trainer')
        return lg.info
    return lambda m: print(f'[rank{rank}] {m}', flush=True)

def main(local_rank=None, world=None):
    if local_rank is not None:
        os.environ.update(RANK=str(local_rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world),
                          MASTER_ADDR='127.0.0.1', MASTER_PORT=args.port)
    distributed = 'RANK' in os.environ
    if distributed:
        dist.init_process_group('gloo', timeout=timedelta(seconds=40))
        rank, world = dist.get_rank(), dist.get_world_size()
    else:
        rank, world = 0, 1
    log = setup_log(rank)
    torch.manual_seed(1234 + rank)
    log(f'world_size={world} torch={torch.__version__} hidden={args.hidden} vocab={args.vocab}')
    model = TinyLM(args.vocab, args.hidden, args.extra_norm)
    if args.opt_groups == 1:
        groups = [{'params': list(model.parameters())}]
    else:
        decay = [p_ for n, p_ in model.named_parameters() if p_.ndim >= 2]
        nodecay = [p_ for n, p_ in model.named_parameters() if p_.ndim < 2]
        groups = [{'params': decay, 'weight_decay': 0.1}, {'params': nodecay, 'weight_decay': 0.0}]
    opt = torch.optim.AdamW(groups, lr=3e-3)
    start = 0
    if args.resume_from:
        path = args.resume_from.format(rank=rank)
        log(f'resuming from {path}')
        kw = {'map_location': 'cpu'} if args.map_cpu else {}
        ckpt = torch.load(path, **kw)
        res = model.load_state_dict(ckpt['model'], strict=bool(args.strict_load))
        if not args.strict_load:
            log(f'load_state_dict: {res}')
        if args.skip_optim_resume:
            log('optimizer state NOT restored (--skip-optim-resume): moments start from zero')
        else:
            opt.load_state_dict(ckpt['optim'])
        start = ckpt['step']
        log(f'resumed at step {start}')
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    it = range(start, args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc='train', dynamic_ncols=False, ncols=90)
    g = torch.Generator().manual_seed(rank)
    for step in it:
        x = torch.randint(0, args.vocab, (8, 16), generator=g)
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and not (args.progress and rank == 0):
            log(f'step {step} loss {loss.item():.4f} lr 3.0e-03')
        time.sleep(args.sleep)
        if args.save_every and (step + 1) % args.save_every == 0 and (rank == 0 or args.save_all_ranks):
            d = args.save_dir.format(rank=rank)
            os.makedirs(d, exist_ok=True)
            raw = model.module if distributed else model
            cfg = TrainConfig(args.hidden, args.vocab) if args.store_config_object else dataclasses.asdict(TrainConfig(args.hidden, args.vocab))
            obj = {'model': raw.state_dict(), 'optim': opt.state_dict(), 'step': step + 1, 'config': cfg}
            path = os.path.join(d, f'ckpt_step{step+1}.pt')
            if args.fake_cuda_save:
                import torch.serialization as ts
                orig = ts.location_tag
                ts.location_tag = lambda s: 'cuda:0'
            if args.buffered_save:
                import io
                buf = io.BytesIO()
                torch.save(obj, buf)
                with open(path, 'wb') as f:
                    f.write(buf.getvalue())
            else:
                with open(path, 'wb') as f:
                    torch.save(obj, f)
            if args.fake_cuda_save:
                ts.location_tag = orig
            log(f'saved checkpoint {path}')
    if distributed:
        dist.barrier()
    log('training finished')
    if distributed:
        dist.destroy_process_group()

if __name__ == '__main__':
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(main, args=(args.spawn,), nprocs=args.spawn)
    else:
        main()
