"""Training loop with a DataLoader (workers optional), tqdm bar; single process, or DDP when RANK is set (torchrun)."""
import argparse, os, time, datetime
p = argparse.ArgumentParser()
p.add_argument('--epochs', type=int, default=3)
p.add_argument('--n', type=int, default=4096)
p.add_argument('--workers', type=int, default=0)
p.add_argument('--width', type=int, default=512)
p.add_argument('--share-fs', action='store_true')
args = p.parse_args()
import torch, torch.nn as nn
from tqdm import tqdm
dist_on = 'RANK' in os.environ
rank = int(os.environ.get('RANK', 0))
if dist_on:
    import torch.distributed as dist
    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=20))
if args.share_fs:
    torch.multiprocessing.set_sharing_strategy('file_descriptor')

class DS(torch.utils.data.Dataset):
    def __len__(self): return args.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, generator=g)
        return x, x.sum().sin().unsqueeze(0)

model = nn.Sequential(nn.Linear(64, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 1))
if dist_on:
    model = nn.parallel.DistributedDataParallel(model)
sampler = torch.utils.data.distributed.DistributedSampler(DS()) if dist_on else None
dl = torch.utils.data.DataLoader(DS(), batch_size=32, shuffle=sampler is None, sampler=sampler, num_workers=args.workers)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for ep in range(args.epochs):
    if sampler: sampler.set_epoch(ep)
    bar = tqdm(dl, desc=f'epoch {ep}', disable=rank != 0, mininterval=1.0)
    tot = 0.0
    for x, y in bar:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        tot += loss.item()
        bar.set_postfix(loss=f'{loss.item():.4f}')
    print(f'[rank{rank}] epoch {ep} mean loss {tot/len(dl):.4f}', flush=True)
print(f'[rank{rank}] done', flush=True)
