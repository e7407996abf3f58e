"""Evaluate a resume_train.py checkpoint and export the weights (for serving / HF upload)."""
import argparse, os, sys, math, time
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument('--ckpt', required=True)
p.add_argument('--weights-only', default='default', choices=['default', 'true', 'false'])
p.add_argument('--map-location', default=None)
p.add_argument('--out', default='export')
p.add_argument('--format', default='pt', choices=['pt', 'safetensors'])
p.add_argument('--eval-batches', type=int, default=4)
args = p.parse_args()
torch.set_num_threads(1)


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.ln = nn.LayerNorm(h); self.fc1 = nn.Linear(h, 4 * h); self.fc2 = nn.Linear(4 * h, h)
    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab, hidden, layers, seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.zeros(1, seq, hidden))
        self.blocks = nn.ModuleList([Block(hidden) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)
    def forward(self, idx):
        x = self.embed(idx) + self.pos[:, :idx.size(1)]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


print(f'torch {torch.__version__}, cuda available: {torch.cuda.is_available()}', flush=True)
print(f'loading {args.ckpt} ({os.path.getsize(args.ckpt)/1e3:.1f} kB)', flush=True)
kw = {'default': {}, 'true': {'weights_only': True}, 'false': {'weights_only': False}}[args.weights_only]
if args.map_location:
    kw['map_location'] = args.map_location
t0 = time.time()
ckpt = torch.load(args.ckpt, **kw)
print(f'loaded in {time.time()-t0:.2f}s, keys: {sorted(ckpt.keys())}', flush=True)
sd = ckpt['model']
vocab, hidden = sd['embed.weight'].shape
layers = len({k.split('.')[1] for k in sd if k.startswith('blocks.')})
model = TinyLM(vocab, hidden, layers)
model.load_state_dict(sd)
model.eval()
cfg = ckpt.get('config')
if cfg is not None:
    print(f'training config: hidden={cfg.hidden} vocab={cfg.vocab} layers={cfg.layers} lr={cfg.lr}')
tot = 0.0
with torch.no_grad():
    for i in range(args.eval_batches):
        g = torch.Generator().manual_seed(99 + i)
        start = torch.randint(0, vocab, (8, 1), generator=g)
        seq = (start + torch.arange(33) * 3) % vocab
        out = model(seq[:, :-1])
        tot += F.cross_entropy(out.reshape(-1, vocab), seq[:, 1:].reshape(-1)).item()
print(f'eval loss {tot/args.eval_batches:.4f} ppl {math.exp(tot/args.eval_batches):.2f} (step {ckpt.get("step")})', flush=True)
os.makedirs(args.out, exist_ok=True)
if args.format == 'safetensors':
    from safetensors.torch import save_file
    save_file(model.state_dict(), os.path.join(args.out, 'model.safetensors'), metadata={'format': 'pt'})
else:
    torch.save(model.state_dict(), os.path.join(args.out, 'pytorch_model.bin'))
print(f'exported to {args.out}', flush=True)
