"""Tiny text/image classifier trainer with real on-disk data (JSONL shards, PNG folders, HF datasets, tokenizer.json)."""
import argparse, os, json, time, logging, warnings, random
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument('--prepare', default='')           # output dir: write a clean dataset
p.add_argument('--data', default='jsonl', choices=['jsonl', 'images', 'hfjson', 'arrow'])
p.add_argument('--root', default='data')           # may contain {rank}
p.add_argument('--tokenizer-file', default='')
p.add_argument('--workers', type=int, default=2)
p.add_argument('--epochs', type=int, default=2)
p.add_argument('--skip-bad', action='store_true')
p.add_argument('--progress', action='store_true')
p.add_argument('--use-logging', action='store_true')
args = p.parse_args()

WORDS = 'the a model train loss data rank shard token image label good bad fast slow red blue green cat dog'.split()

def prepare(out):
    from PIL import Image
    import numpy as np
    random.seed(0)
    os.makedirs(out, exist_ok=True)
    for r in range(4):
        with open(f'{out}/shard-{r:02d}.jsonl', 'w') as f:
            for i in range(200):
                f.write(json.dumps({'id': f'{r}-{i}', 'text': ' '.join(random.choices(WORDS, k=random.randint(4, 12))), 'label': random.randint(0, 2)}) + '\n')
        d = f'{out}/images-{r:02d}'
        os.makedirs(d, exist_ok=True)
        for i in range(64):
            arr = (np.random.rand(16, 16, 3) * 255).astype('uint8')
            Image.fromarray(arr).save(f'{d}/img_{i:04d}_cls{i%3}.png')
    from tokenizers import Tokenizer, models, pre_tokenizers
    tok = Tokenizer(models.WordLevel({w: i + 2 for i, w in enumerate(WORDS)} | {'[PAD]': 0, '[UNK]': 1}, unk_token='[UNK]'))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(f'{out}/tokenizer.json')
    print('prepared', out)

class JsonlDataset(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = []
        with open(path, 'rb') as f:
            off = 0
            for line in f:
                self.offsets.append(off); off += len(line)
    def __len__(self):
        return len(self.offsets)
    def __getitem__(self, i):
        with open(self.path, 'rb') as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        return encode(rec['text']), rec['label']

class ImageFolder(Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, x) for x in os.listdir(d) if x.endswith('.png'))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        from PIL import Image
        path = self.files[i]
        try:
            img = Image.open(path).convert('RGB')
        except Exception as e:
            if not args.skip_bad:
                raise
            warnings.warn(f'skipping unreadable image {path}: {e!r}')
            img = Image.new('RGB', (16, 16))
        x = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8).float().view(16, 16, 3).permute(2, 0, 1) / 255.
        return x, int(path.split('cls')[-1][0])

TOK = None
def encode(text):
    if TOK is not None:
        ids = TOK(text, padding='max_length', truncation=True, max_length=12)['input_ids']
    else:
        ids = [(WORDS.index(w) + 2) if w in WORDS else 1 for w in text.split()][:12]
        ids += [0] * (12 - len(ids))
    return torch.tensor(ids)

def main():
    global TOK
    distributed = 'RANK' in os.environ
    if distributed:
        dist.init_process_group('gloo', timeout=timedelta(seconds=40))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format=f'%(asctime)s - %(levelname)s - rank={rank} - %(message)s')
        log = logging.getLogger(__name__).info
    else:
        log = lambda m: print(f'[rank {rank}/{world}] {m}', flush=True)
    if args.tokenizer_file:
        from transformers import PreTrainedTokenizerFast
        log(f'loading tokenizer {args.tokenizer_file}')
        TOK = PreTrainedTokenizerFast(tokenizer_file=args.tokenizer_file, pad_token='[PAD]', unk_token='[UNK]')
    root = args.root.format(rank=rank)
    if args.data == 'jsonl':
        ds = JsonlDataset(root); kind = 'text'
    elif args.data == 'images':
        ds = ImageFolder(root); kind = 'image'
    else:
        import datasets
        if args.data == 'hfjson':
            hf = datasets.load_dataset('json', data_files=sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith('.jsonl')), split='train', cache_dir=os.path.join('run', 'hf_cache', f'rank{rank}'))
        else:
            hf = datasets.load_from_disk(root)
        log(f'hf dataset: {hf}')
        hf = hf.map(lambda e: {'ids': encode(e['text']).tolist()})
        hf.set_format('torch', columns=['ids', 'label'])
        ds = [(r['ids'], r['label']) for r in hf]; kind = 'text'
    log(f'dataset {root}: {len(ds)} samples, {args.workers} workers')
    model = nn.Sequential(nn.Embedding(len(WORDS) + 2, 32), nn.Flatten(), nn.Linear(32 * 12, 3)) if kind == 'text' else \
            nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 3))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=args.workers, generator=torch.Generator().manual_seed(rank))
    step = 0
    for ep in range(args.epochs):
        it = dl
        if args.progress and rank == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f'epoch {ep}', ncols=90)
        for x, y in it:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if step % 5 == 0:
                log(f'epoch {ep} step {step} loss {loss.item():.4f} acc@batch {(model(x).argmax(1) == y).float().mean():.3f}')
            time.sleep(0.02)
    if distributed:
        dist.barrier()
    log('finished training')
    if distributed:
        dist.destroy_process_group()

if __name__ == '__main__':
    if args.prepare:
        prepare(args.prepare)
    else:
        main()
