"""DDP training of a tiny GPT-2 / MLP on synthetic data, for outside stops and resource limits.
Launch forms: torchrun/elastic env, manual RANK/WORLD_SIZE env, or --spawn N (torch.multiprocessing.spawn)."""
import argparse, os, sys, time, signal, logging, warnings, datetime, json, io

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=120)
p.add_argument('--step-sleep', type=float, default=0.15)
p.add_argument('--pid-dir', default=None)
p.add_argument('--pg-timeout', type=int, default=30)
p.add_argument('--spawn', type=int, default=0)
p.add_argument('--mport', type=int, default=46800)
p.add_argument('--stamp-logging', action='store_true')
p.add_argument('--progress', action='store_true')
p.add_argument('--model', choices=['mlp', 'gpt2'], default='mlp')
p.add_argument('--print-every', type=int, default=10)
p.add_argument('--handle-usr1', action='store_true')
p.add_argument('--mbarrier-every', type=int, default=0)
p.add_argument('--ckpt-dir', default=None)
p.add_argument('--ckpt-every', type=int, default=0)
p.add_argument('--shard-dir', default=None)       # data read from shard files (handle cache)
p.add_argument('--metrics-file', default=None)    # per-rank jsonl metrics, appended each step
p.add_argument('--eval-every', type=int, default=0)
p.add_argument('--eval-vocab', type=int, default=50257)
p.add_argument('--eval-tokens', type=int, default=4096)
p.add_argument('--init-delay', type=float, default=0.0)
p.add_argument('--noisy', action='store_true')
args = p.parse_args()

import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def get_logger(rank):
    log = logging.getLogger('train')
    if args.stamp_logging:
        logging.basicConfig(level=logging.INFO,
                            format=f'%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s')
        return log.info
    return lambda m: print(f'[rank{rank}] {m}', flush=True)


class ShardData:
    """Reads samples from shard files; keeps handles open for fast re-reads (handle cache)."""
    def __init__(self, d, rank):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d))
        self.handles = {}
        self.rank = rank
    def batch(self, step):
        path = self.files[(step * 7 + self.rank) % len(self.files)]
        if path not in self.handles:
            self.handles[path] = open(path, 'rb')
        f = self.handles[path]
        f.seek(0)
        raw = f.read(16 * 32 * 4)
        x = torch.frombuffer(bytearray(raw), dtype=torch.float32).view(16, 32).clone()
        return x


def build_model():
    if args.model == 'gpt2':
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
        return GPT2LMHeadModel(cfg)
    return nn.Sequential(nn.Linear(32, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))


def main(rank_from_spawn=None):
    if rank_from_spawn is not None:
        rank, world = rank_from_spawn, args.spawn
        os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
        os.environ['MASTER_PORT'] = str(args.mport)
        os.environ['RANK'] = str(rank); os.environ['WORLD_SIZE'] = str(world)
    else:
        rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
    log = get_logger(rank)
    if args.init_delay:
        time.sleep(args.init_delay)
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f'rank{rank}.pid'), 'w') as f:
            f.write(str(os.getpid()))
    if args.handle_usr1:
        def on_usr1(sig, frame):
            log(f'WARNING: received SIGUSR1 (preemption notice from scheduler); will save an emergency checkpoint at the next step boundary')
            globals()['_usr1'] = True
        signal.signal(signal.SIGUSR1, on_usr1)
    log(f'init_process_group(backend=gloo, world_size={world}) pid={os.getpid()}')
    dist.init_process_group('gloo', rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    if args.noisy:
        # copied from the GPU recipe: AMP scaler + find_unused_parameters
        scaler = torch.cuda.amp.GradScaler(enabled=True)
        model = DDP(build_model(), find_unused_parameters=True)
    else:
        model = DDP(build_model())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = ShardData(args.shard_dir, rank) if args.shard_dir else None
    mfile = None
    if args.metrics_file:
        mfile = open(args.metrics_file.format(rank=rank), 'a')
    it = range(args.steps)
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc='train', mininterval=0.5)
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for step in it:
        if args.model == 'gpt2':
            ids = torch.randint(0, 512, (8, 32), generator=g)
            loss = model(input_ids=ids, labels=ids).loss
        else:
            x = data.batch(step) if data else torch.randn(16, 32, generator=g)
            y = x.sum(1, keepdim=True).sin()
            loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if mfile:
            mfile.write(json.dumps({'step': step, 'rank': rank, 'loss': loss.item(), 'time': time.time(),
                                    'grad_norm_hist': [round(float(p.grad.norm()), 6) for p in model.parameters()]}) + '\n')
            mfile.flush()
        if args.eval_every and (step + 1) % args.eval_every == 0:
            with torch.no_grad():
                # full-vocabulary logits for the eval tokens (perplexity over the whole vocabulary)
                h = torch.randn(args.eval_tokens, 64)
                w = torch.randn(64, args.eval_vocab)
                logits = h @ w
                lp = torch.log_softmax(logits, -1)
                log(f'eval step {step+1}: mean logprob {lp.mean().item():.4f}')
        if globals().get('_usr1') or (args.ckpt_every and (step + 1) % args.ckpt_every == 0):
            if rank == 0 and args.ckpt_dir:
                buf = io.BytesIO()
                torch.save({'model': model.module.state_dict(), 'opt': opt.state_dict(), 'step': step + 1}, buf)
                path = os.path.join(args.ckpt_dir, f'ckpt_step{step+1}.pt')
                with open(path, 'wb') as f:
                    f.write(buf.getvalue())
                log(f'saved checkpoint {path} ({len(buf.getvalue())/1e6:.1f} MB)')
            if globals().get('_usr1'):
                globals()['_usr1'] = False
            dist.barrier()
        if step % args.print_every == 0 and not (args.progress and rank == 0):
            log(f'step {step}/{args.steps} loss {loss.item():.4f} lr 3.0e-04 {(time.time()-t0)/(step+1):.3f}s/it')
        time.sleep(args.step_sleep)
        if args.mbarrier_every and (step + 1) % args.mbarrier_every == 0:
            # catch stragglers early: name the rank that does not arrive
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    log(f'training done: {args.steps} steps, final loss {loss.item():.4f}')
    dist.barrier()
    dist.destroy_process_group()


def _spawn_entry(i):
    main(rank_from_spawn=i)


if __name__ == '__main__':
    if args.spawn:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, nprocs=args.spawn)
    else:
        main()
