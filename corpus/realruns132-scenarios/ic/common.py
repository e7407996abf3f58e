import os, sys, logging, argparse
from datetime import timedelta
import torch
import torch.distributed as dist

def base_parser():
    p = argparse.ArgumentParser()
    p.add_argument('--bug', default='none')
    p.add_argument('--bug-rank', type=int, default=0)
    p.add_argument('--bug-step', type=int, default=5)
    p.add_argument('--steps', type=int, default=20)
    p.add_argument('--epochs', type=int, default=1)
    p.add_argument('--use-logging', action='store_true')
    p.add_argument('--progress', action='store_true')
    p.add_argument('--spawn', type=int, default=0)
    p.add_argument('--port', type=int, default=46300)
    return p

def get_logger(rank, use_logging):
    log = logging.getLogger('train')
    if use_logging:
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
            format=f'%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s')
        return log.info
    return lambda m: print(m, flush=True)

def setup_dist(rank=None, world=None, port=46300):
    if rank is not None:
        os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
        os.environ.setdefault('MASTER_PORT', str(port))
        dist.init_process_group('gloo', rank=rank, world_size=world, timeout=timedelta(seconds=40))
        return rank, world
    if 'RANK' in os.environ:
        dist.init_process_group('gloo', timeout=timedelta(seconds=40))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1
