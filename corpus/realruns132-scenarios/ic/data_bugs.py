"""Text-classification trainer over a small jsonl corpus written locally. --bug: collate | worker_keyerror | none"""
import os, sys, json, tempfile
sys.path.insert(0, os.path.dirname(__file__))
import numpy as np
import torch, torch.nn as nn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm
from common import base_parser, get_logger, setup_dist

def write_corpus(path, n, bug, seed=0):
    rng = np.random.default_rng(seed)
    with open(path, 'w') as f:
        for i in range(n):
            L = 16 if bug != 'collate' else int(rng.integers(12, 24))
            rec = {'ids': rng.integers(1, 100, size=L).tolist(), 'label': int(rng.integers(0, 4))}
            if bug == 'worker_keyerror' and i == 157:
                rec = {'ids': rec['ids'], 'lable': rec['label']}   # record from the annotation tool typo
            f.write(json.dumps(rec) + '\n')

class JsonlDS(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(l) for l in open(path)]
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r['ids']), torch.tensor(r['label'])

class BoW(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(100, 32)
        self.fc = nn.Linear(32, 4)
    def forward(self, ids):
        return self.fc(self.emb(ids))

def main(rank=None, world=None, args=None):
    rank, world = setup_dist(rank, world, args.port)
    log = get_logger(rank, args.use_logging)
    os.makedirs('data', exist_ok=True)
    path = f'data/train_{args.bug}.jsonl'
    if rank == 0:
        write_corpus(path, 256, args.bug)
    if world > 1:
        dist.barrier()
    ds = JsonlDS(path)
    sampler = DistributedSampler(ds, shuffle=False) if world > 1 else None
    nw = int(os.environ.get('NUM_WORKERS', '2'))
    dl = DataLoader(ds, batch_size=8, sampler=sampler, shuffle=False, num_workers=nw)
    model = BoW()
    if world > 1:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    log(f'[rank {rank}] {len(ds)} examples, {len(dl)} batches per epoch, num_workers={nw}')
    for ep in range(args.epochs):
        if sampler: sampler.set_epoch(ep)
        it = dl
        if args.progress and rank == 0:
            it = tqdm(dl, desc=f'Epoch {ep+1}/{args.epochs}', ncols=100, file=sys.stderr, mininterval=0)
        tot = 0.0
        for i, (ids, y) in enumerate(it):
            loss = lossf(model(ids), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
            if args.progress and rank == 0:
                it.set_postfix(loss=f'{loss.item():.3f}')
        log(f'[rank {rank}] epoch {ep+1} train_loss {tot/len(dl):.4f}')
    log(f'[rank {rank}] done')
    if world > 1:
        dist.destroy_process_group()

if __name__ == '__main__':
    args = base_parser().parse_args()
    main(args=args)
