"""FSDP2 (fully_shard) MLP trained on gloo; meant to be run with TORCH_DISTRIBUTED_DEBUG=DETAIL."""
import os, datetime, torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.fsdp import fully_shard
dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
for m in model:
    if isinstance(m, nn.Linear): fully_shard(m)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
g = torch.Generator().manual_seed(rank)
for step in range(1, 13):
    x = torch.randn(32, 16, generator=g); y = x[:, :3].sum(1, keepdim=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    l = loss.detach().clone(); dist.all_reduce(l); l /= world
    if rank == 0 and step % 3 == 0: print(f'step {step} loss {l.item():.4f}', flush=True)
dist.barrier()
if rank == 0: print('finished', flush=True)
dist.destroy_process_group()
