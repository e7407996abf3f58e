"""DDP training with torch.distributed.checkpoint (DCP) save/resume of model + optimizer (gloo, CPU)."""
import argparse, os, sys, time, datetime, logging
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.checkpoint.stateful import Stateful
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=30)
p.add_argument('--save-every', type=int, default=10)
p.add_argument('--ckpt-dir', default='dcp_ckpt')
p.add_argument('--resume-step', type=int, default=None)
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--extra-norm', action='store_true', help='new LayerNorm before the head (model change)')
p.add_argument('--pg-timeout', type=int, default=30)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)s %(name)s: %(message)s')
log = logging.getLogger('dcp_train')
if 'RANK' in os.environ:
    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=args.pg_timeout))
rank = dist.get_rank() if dist.is_initialized() else 0
world = dist.get_world_size() if dist.is_initialized() else 1
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self, h, extra_norm=False):
        super().__init__()
        self.inp = nn.Linear(16, h)
        self.body = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU())
        if extra_norm:
            self.norm = nn.LayerNorm(h)
        self.out = nn.Linear(h, 4)
    def forward(self, x):
        x = self.body(self.inp(x))
        if hasattr(self, 'norm'):
            x = self.norm(x)
        return self.out(x)


class AppState(Stateful):
    def __init__(self, model, optimizer, step=0):
        self.model, self.optimizer, self.step = model, optimizer, step
    def state_dict(self):
        msd, osd = get_state_dict(self.model, self.optimizer)
        return {'model': msd, 'optim': osd, 'step': self.step}
    def load_state_dict(self, sd):
        set_state_dict(self.model, self.optimizer, model_state_dict=sd['model'], optim_state_dict=sd['optim'])
        self.step = sd['step']


torch.manual_seed(0)
model = Net(args.hidden, args.extra_norm)
ddp = DDP(model) if dist.is_initialized() else model
opt = torch.optim.Adam(ddp.parameters(), lr=1e-2)
state = AppState(ddp, opt)
if rank == 0:
    log.info(f'Net hidden={args.hidden} params={sum(p.numel() for p in model.parameters())} world={world}')

if args.resume_step is not None:
    path = os.path.join(args.ckpt_dir, f'step_{args.resume_step}')
    log.info(f'[rank{rank}] loading DCP checkpoint {path}')
    sd = {'app': state}
    dcp.load(sd, checkpoint_id=path)
    log.info(f'[rank{rank}] resumed at step {state.step}')

W = torch.randn(16, 4, generator=torch.Generator().manual_seed(1))
for step in range(state.step, args.steps):
    g = torch.Generator().manual_seed(step * 10 + rank)
    x = torch.randn(32, 16, generator=g)
    y = (x @ W).argmax(1)
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    state.step = step + 1
    if (step + 1) % 5 == 0 and rank == 0:
        log.info(f'step {step+1} loss {loss.item():.4f}')
    if (step + 1) % args.save_every == 0:
        path = os.path.join(args.ckpt_dir, f'step_{step+1}')
        t0 = time.time()
        dcp.save({'app': state}, checkpoint_id=path)
        if rank == 0:
            log.info(f'saved DCP checkpoint {path} in {time.time()-t0:.2f}s')
if rank == 0:
    log.info('done')
if dist.is_initialized():
    dist.destroy_process_group()
