"""Tiny GPT-2 fine-tuning loop (DDP over gloo) with safetensors / from_pretrained checkpointing."""
import argparse, os, time, logging, warnings
from datetime import timedelta
import torch, torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification
from safetensors.torch import save_file, load_file

p = argparse.ArgumentParser()
p.add_argument('--init-from', default='')        # may contain {rank}
p.add_argument('--shard-weights', default='')    # safetensors file to load with load_file, may contain {rank}
p.add_argument('--head', default='lm', choices=['lm', 'cls'])
p.add_argument('--steps', type=int, default=20)
p.add_argument('--save-at', type=int, default=0)
p.add_argument('--save-dir', default='run/hf_out')
p.add_argument('--save-mode', default='pretrained', choices=['pretrained', 'save_file'])
p.add_argument('--vocab', type=int, default=512)
p.add_argument('--progress', action='store_true')
p.add_argument('--use-logging', action='store_true')
args = p.parse_args()

distributed = 'RANK' in os.environ
if distributed:
    dist.init_process_group('gloo', timeout=timedelta(seconds=40))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format=f'%(asctime)s %(levelname)s rank{rank} %(name)s | %(message)s')
    log = logging.getLogger('finetune').info
else:
    log = lambda m: print(f'[r{rank}] {m}', flush=True)

cfg = GPT2Config(vocab_size=args.vocab, n_positions=64, n_embd=64, n_layer=2, n_head=2, num_labels=3, pad_token_id=0)
cls = GPT2LMHeadModel if args.head == 'lm' else GPT2ForSequenceClassification
if args.init_from:
    path = args.init_from.format(rank=rank)
    log(f'loading pretrained weights from {path}')
    model = cls.from_pretrained(path)
else:
    torch.manual_seed(0)
    model = cls(cfg)
if args.shard_weights:
    path = args.shard_weights.format(rank=rank)
    log(f'loading weights shard {path}')
    sd = load_file(path)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    log(f'loaded {len(sd)} tensors (missing={len(missing)} unexpected={len(unexpected)})')
log(f'model params: {sum(p.numel() for p in model.parameters())/1e3:.1f}K world={world}')
if distributed:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
it = range(args.steps)
if args.progress and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc='finetune', ncols=90)
g = torch.Generator().manual_seed(rank)
for step in it:
    x = torch.randint(1, args.vocab, (4, 32), generator=g)
    if args.head == 'lm':
        out = model(input_ids=x, labels=x)
    else:
        out = model(input_ids=x, labels=torch.randint(0, 3, (4,), generator=g))
    opt.zero_grad(); out.loss.backward(); opt.step()
    if step % 5 == 0 and not (args.progress and rank == 0):
        log(f'step {step} loss {out.loss.item():.4f}')
    if args.save_at and step + 1 == args.save_at and rank == 0:
        raw = model.module if distributed else model
        os.makedirs(args.save_dir, exist_ok=True)
        if args.save_mode == 'pretrained':
            raw.save_pretrained(args.save_dir)
        else:
            save_file(raw.state_dict(), os.path.join(args.save_dir, 'model.safetensors'), metadata={'step': str(step + 1)})
        log(f'saved weights to {args.save_dir} at step {step+1}')
    time.sleep(0.05)
if distributed:
    dist.barrier()
log('done')
if distributed:
    dist.destroy_process_group()
