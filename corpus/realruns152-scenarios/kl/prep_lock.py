"""DDP trainer whose rank 0 builds a tokenised-data cache under a file lock before training."""
import argparse, os, sys, time, datetime, logging
import torch, torch.nn as nn, torch.distributed as dist
from filelock import FileLock
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--cache', default='cache')
p.add_argument('--lock-timeout', type=float, default=10)
p.add_argument('--steps', type=int, default=12)
args = p.parse_args()
rank, world = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
logging.basicConfig(level=logging.INFO, format=f'%(asctime)s %(levelname)s [rank{rank}] %(message)s')
log = logging.getLogger(__name__)
dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=40))
os.makedirs(args.cache, exist_ok=True)
cache_file = os.path.join(args.cache, 'tokens.pt')
if rank == 0:
    log.info('building token cache in %s', args.cache)
    with FileLock(cache_file + '.lock', timeout=args.lock_timeout):
        if not os.path.exists(cache_file):
            torch.save(torch.randint(0, 1000, (2048, 32)), cache_file)
    log.info('cache ready')
dist.barrier()
data = torch.load(cache_file)
model = DDP(nn.Sequential(nn.Embedding(1000, 32), nn.Flatten(), nn.Linear(32 * 32, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.steps):
    x = data[rank::world][step * 8:(step + 1) * 8]
    loss = model(x).logsumexp(1).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if rank == 0 and step % 4 == 0: log.info('step %d loss %.4f', step, loss.item())
dist.destroy_process_group()
