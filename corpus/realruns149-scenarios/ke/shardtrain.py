"""Tiny DDP text-classifier trained on per-rank data shards; flags select an induced fault."""
import argparse, os, sys, json, time, math, logging, warnings, datetime
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=1)
p.add_argument('--fault-step', type=int, default=3)
p.add_argument('--steps', type=int, default=8)
p.add_argument('--workers', type=int, default=0)
p.add_argument('--bs', type=int, default=8)
p.add_argument('--logfmt', action='store_true')
p.add_argument('--bars', action='store_true')
p.add_argument('--workdir', default='run')
p.add_argument('--resume', action='store_true')
p.add_argument('--noise', action='store_true')
p.add_argument('--dl-timeout', type=int, default=30)
a = p.parse_args()

VOCAB, SEQ, NCLS = 100, 16, 4
rank = int(os.environ.get('RANK', 0)); world = int(os.environ.get('WORLD_SIZE', 1))
if world > 1:
    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=40))
if a.logfmt:
    logging.basicConfig(level=logging.INFO, format=f'%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s')
    log = logging.getLogger('train').info
else:
    log = lambda m: print(f'[rank{rank}] {m}', flush=True)
F = a.fault if rank == a.fault_rank else 'none'
wd = a.workdir; os.makedirs(f'{wd}/data', exist_ok=True); os.makedirs(f'{wd}/ckpt', exist_ok=True)
torch.manual_seed(0)

# ---- shard preparation (normally a separate preprocessing job) ----
def make_shard(r, n=64):
    g = np.random.default_rng(r)
    toks = g.integers(1, VOCAB, size=(n, SEQ)).tolist()
    labels = [['neg', 'pos', 'neutral', 'mixed'][i % 4] for i in range(n)]
    return {'tokens': toks, 'labels': labels}
shard_path = f'{wd}/data/shard_{rank:02d}.json'
if F == 'file-missing':
    shard_path = f'{wd}/data/shard-{rank:05d}-of-{world:05d}.json'   # naming scheme changed in config
elif not os.path.exists(shard_path):
    s = make_shard(rank)
    if F == 'ragged': s['tokens'][a.fault_step * a.bs + 3].append(57)          # one row never truncated
    if F == 'oov': s['tokens'][a.fault_step * a.bs + 5][7] = VOCAB + 2         # ids from a bigger tokenizer
    if F == 'badlabel': s['labels'][a.fault_step * a.bs + 2] = 'Positive'      # label spelled differently
    if F == 'empty': s = {'tokens': [], 'labels': []}
    json.dump(s, open(shard_path, 'w'))

LABEL2ID = {'neg': 0, 'pos': 1, 'neutral': 2, 'mixed': 3}
class ShardDS(Dataset):
    def __init__(self, path):
        with open(path) as f: self.d = json.load(f)
        log(f'loaded {len(self.d["tokens"])} samples from {path}')
        if F in ('npyfeat', 'fdleak'):
            self.featdir = f'{wd}/feats_r{rank}'; os.makedirs(self.featdir, exist_ok=True)
            for i in range(len(self)):
                fn = f'{self.featdir}/{i:05d}.npy'
                np.save(fn, np.random.rand(SEQ).astype(np.float32))
            bad = f'{self.featdir}/{a.fault_step * a.bs + 1:05d}.npy'
            if F == 'npyfeat': data = open(bad, 'rb').read(); open(bad, 'wb').write(data[:100])   # partial sync from object store
    def __len__(self): return len(self.d['tokens'])
    def __getitem__(self, i):
        x = torch.tensor(self.d['tokens'][i])
        y = LABEL2ID[self.d['labels'][i]]
        if F == 'npyfeat':
            w = torch.from_numpy(np.load(f'{self.featdir}/{i:05d}.npy'))
            return x, y, w
        if F == 'fdleak':
            fh = open(f'{self.featdir}/{i:05d}.npy', 'rb'); self.handles = getattr(self, 'handles', []) + [fh]   # kept for mmap reuse
            return x, y, torch.from_numpy(np.load(fh))
        if F == 'slowread' and i == a.fault_step * a.bs:
            with open(f'/proc/self/stat') as fh: fh.read()
            time.sleep(60)          # stands in for a read blocked on a hung NFS mount
        if F == 'f64feat':
            return x, y, torch.from_numpy(np.random.rand(SEQ))     # numpy default float64
        if F == 'nanfeat' and i == a.fault_step * a.bs:
            return x, y, torch.full((SEQ,), float('nan'))
        if F == 'inplace-mask' and i >= a.fault_step * a.bs:
            return x, y, torch.full((SEQ,), 0.5)
        return x, y, torch.ones(SEQ)

class Net(nn.Module):
    def __init__(self, hid=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, hid); self.proj = nn.Linear(hid, hid); self.head = nn.Linear(hid, NCLS); self.gate = nn.Linear(SEQ, hid)
        if a.fault == 'tied-st':      # tie_word_embeddings=True style LM head (config option, all ranks)
            self.decoder = nn.Linear(hid, VOCAB, bias=False); self.decoder.weight = self.emb.weight
    def forward(self, x, w):
        h = self.emb(x)
        h = torch.sigmoid(self.proj(h))
        if F == 'inplace-mask' and (w < 1).any():
            h.mul_(w.unsqueeze(-1))          # down-weight low-confidence positions
        h = h + self.gate(w).unsqueeze(1)
        return self.head(h.mean(1))

ds = ShardDS(shard_path)
g = torch.Generator().manual_seed(rank)
dl = DataLoader(ds, batch_size=a.bs, shuffle=False, num_workers=a.workers, drop_last=False,
                timeout=a.dl_timeout if a.workers else 0)
model = Net()
if F == 'hid48': model = Net(48)
if F == 'optgroups':   # older code version: decay / no-decay groups
    opt = torch.optim.AdamW([{'params': [p for n, p in model.named_parameters() if n.endswith('weight')], 'weight_decay': 0.01},
                             {'params': [p for n, p in model.named_parameters() if n.endswith('bias')], 'weight_decay': 0.0}], lr=3e-3)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.StepLR(opt, 4, 0.5)
if a.noise:
    warnings.warn('TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.', UserWarning)
    sched.step()   # called before optimizer.step(): triggers the scheduler-order warning

ck = f'{wd}/ckpt/rank{rank}.pt'
if a.resume:
    log(f'resuming from {ck}')
    state = torch.load(ck, map_location='cpu')
    model.load_state_dict(state['model'])
    opt.load_state_dict(state['optim'])
    log(f'resumed at step {state["step"]}')
if world > 1:
    model = DDP(model)
lossf = nn.CrossEntropyLoss()
it = range(a.steps)
if a.bars:
    from tqdm import tqdm
    it = tqdm(it, desc=f'rank{rank} train', file=sys.stdout, mininterval=0, ncols=90)
data = iter(dl)
t0 = time.time()
for step in it:
    try:
        x, y, w = next(data)
    except StopIteration:
        data = iter(dl); x, y, w = next(data)
    if F == 'hostoom' and step == a.fault_step:
        log('building eval cache of all activations')
        cache = torch.empty(64, 1024, 1024, 16)     # 4 GiB
        cache.fill_(0)
    if F == 'lastbatch':
        w = w.view(a.bs, SEQ)
    if F == 'cholesky' and step == a.fault_step:
        emb = model.module.emb.weight.detach() if world > 1 else model.emb.weight.detach()
        cov = emb[:40].T @ emb[:40]  # 32x32 from 40 rows... whitening of embedding space
        cov = emb[:8].T @ emb[:8]
        L = torch.linalg.cholesky(cov)
    out = model(x, w)
    loss = lossf(out, y)
    if not torch.isfinite(loss):
        log(f'step {step}: loss={loss.item()}')
        raise FloatingPointError(f'Loss is {loss.item()} at step {step}; stopping (non-finite loss)')
    opt.zero_grad(); loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); sched.step()
    if a.noise and step == 2 and rank == 0:
        log(f'WARNING: grad norm {gn.item()*1e3:.1f} exceeds clip 1.0 -- clipping (loss spike?)')
    if not a.bars or step % 4 == 3:
        log(f'step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr {sched.get_last_lr()[0]:.2e} samples/s {a.bs*(step+1)/(time.time()-t0+1e-9):.1f}')
    time.sleep(0.2)

mstate = model.module.state_dict() if world > 1 else model.state_dict()
if F == 'ddp-prefix':
    mstate = model.state_dict()   # saved wrapper keys
os.makedirs(os.path.dirname(ck), exist_ok=True)
if F == 'fullfs':
    ck = f'{a.workdir}/scratch_r{rank}/ckpt.pt'
if F == 'tied-st':   # rank that exports the weights for serving
    from safetensors.torch import save_file
    save_file(mstate, f'{wd}/ckpt/model.safetensors'); log('exported model.safetensors')
buf = __import__('io').BytesIO(); st = {'model': mstate, 'optim': opt.state_dict(), 'step': a.steps}
if F == 'pickleobj': st['args'] = a
torch.save(st, buf)
with open(ck, 'wb') as f:
    f.write(buf.getvalue())
log(f'saved checkpoint {ck} ({buf.tell()} bytes)')
if world > 1:
    dist.barrier(); dist.destroy_process_group()
log('done')
