"""Single-process trainer with resume, autotuned batch size, DataLoader worker recovery and checkpoint export.
--mode selects the behaviour."""
import argparse, os, sys, time, math, logging, json
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument('--mode', default='train')
p.add_argument('--steps', type=int, default=30)
p.add_argument('--bs', type=int, default=32)
p.add_argument('--workers', type=int, default=0)
p.add_argument('--slow', type=float, default=0.0)
p.add_argument('--out', default='out')
p.add_argument('--resume', default='')
p.add_argument('--trust-ckpt', action='store_true')
p.add_argument('--recover', action='store_true')
p.add_argument('--no-decay-split', action='store_true')
p.add_argument('--verbose-steps', action='store_true')
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format='%(asctime)s %(levelname)-7s %(name)s | %(message)s', stream=sys.stdout)
log = logging.getLogger('single')

class Toy(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, 100, (n, 12), generator=g)
        self.y = (self.x.sum(1) % 2)
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        if args.slow: time.sleep(args.slow)
        return self.x[i], self.y[i]

class LM(nn.Module):
    def __init__(self, vocab=100, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
        self.out = nn.Linear(d, vocab)
        self.out.weight = self.emb.weight      # tied input/output embeddings
        self.cls = nn.Linear(vocab, 2)
    def forward(self, x):
        h = self.mlp(self.emb(x)).mean(1)
        return self.cls(self.out(h))

def make_opt(model):
    if args.no_decay_split:
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
        return torch.optim.AdamW([{'params': decay, 'weight_decay': 0.1}, {'params': nodecay, 'weight_decay': 0.0}], lr=3e-3)
    return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)

def make_loader(ds, bs):
    return DataLoader(ds, batch_size=bs, shuffle=True, num_workers=args.workers,
                      timeout=30 if args.workers else 0)

def find_batch_size(model, start):
    bs = start
    while bs >= 8:
        try:
            x = torch.randint(0, 100, (bs, 12))
            # a probe with the activation footprint of a long-context batch
            probe = torch.empty(bs, 4096, 4096)
            probe.fill_(0.0)
            del probe
            loss = nn.functional.cross_entropy(model(x), torch.zeros(bs, dtype=torch.long)); loss.backward()
            model.zero_grad(set_to_none=True)
            log.info('batch size %d fits', bs)
            return bs
        except RuntimeError as e:
            if "can't allocate memory" not in str(e): raise
            log.warning('batch size %d does not fit, halving. Error was:\n%s', bs, e)
            bs //= 2
    raise SystemExit('no batch size fits')

def main():
    os.makedirs(args.out, exist_ok=True) if args.mode not in ('readonly',) else None
    torch.manual_seed(0)
    model = LM()
    opt = make_opt(model)
    start = 0
    if args.resume:
        log.info('loading checkpoint %s', args.resume)
        ck = torch.load(args.resume, map_location='cpu', weights_only=False) if args.trust_ckpt else torch.load(args.resume, map_location='cpu')
        model.load_state_dict(ck['model'])
        opt.load_state_dict(ck['optimizer'])
        start = ck['step']
        log.info('resumed at step %d', start)
    bs = args.bs
    if args.mode == 'autobs':
        bs = find_batch_size(model, 128)
    ds = Toy(4096)
    dl = make_loader(ds, bs)
    it = iter(dl)
    step = start
    t0 = time.time()
    while step < args.steps:
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl); continue
        except RuntimeError:
            if not args.recover: raise
            log.exception('DataLoader iterator failed at step %d; recreating workers and continuing', step)
            it = iter(dl); continue
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        step += 1
        if step % 5 == 0 or args.verbose_steps:
            print(f'step {step:4d} | loss {loss.item():.4f} | {(time.time()-t0)/max(step-start,1)*1000:.1f} ms/step', flush=not args.verbose_steps)
        if step % 10 == 0:
            ck = {'model': model.state_dict(), 'optimizer': opt.state_dict(), 'step': step, 'args': args}
            if args.mode == 'safetensors':
                from safetensors.torch import save_file
                save_file(model.state_dict(), os.path.join(args.out, f'model_{step}.safetensors'))
                log.info('exported model_%d.safetensors', step)
            else:
                path = os.path.join(args.out, f'ckpt_{step}.pt')
                torch.save(ck, path)
                log.info('saved %s', path)
    log.info('done: %d steps, final loss %.4f', step, loss.item())

if __name__ == '__main__':
    main()
