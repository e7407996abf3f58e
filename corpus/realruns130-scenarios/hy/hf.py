"""HF Trainer on a tiny GPT-2 built from a config, synthetic token data (no downloads).

--fault none        healthy (with --noisy: warnings and a few noisy batches)
--fault tokmean     custom compute_loss normalises the summed token loss by the number of label tokens;
                    --fault-rank gets a batch where every label is -100 at --fault-step (0/0)
--lr                a too-high learning rate makes the loss diverge
"""
import argparse, os, sys, math, warnings
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument('--fault', default='none')
p.add_argument('--fault-rank', type=int, default=1)
p.add_argument('--fault-step', type=int, default=20)
p.add_argument('--lr', type=float, default=5e-4)
p.add_argument('--steps', type=int, default=60)
p.add_argument('--logsteps', type=int, default=5)
p.add_argument('--nanfilter', type=int, default=0)
p.add_argument('--tqdm', type=int, default=0)
p.add_argument('--noisy', action='store_true')
p.add_argument('--outdir', default='tmp/hf_out')
p.add_argument('--warmup', type=int, default=0)
p.add_argument('--clip', type=float, default=1.0)
p.add_argument('--sample-every', type=int, default=0)
p.add_argument('--temperature', type=float, default=0.8)
args = p.parse_args()

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback
from datasets import Dataset

VOCAB, SEQ = 128, 32
rank = int(os.environ.get('RANK', 0))
world = int(os.environ.get('WORLD_SIZE', 1))


def make_data(n):
    g = torch.Generator().manual_seed(11)
    trans = torch.softmax(torch.randn(VOCAB, VOCAB, generator=g) * 3, -1)
    seqs = torch.zeros(n, SEQ, dtype=torch.long)
    seqs[:, 0] = torch.randint(0, VOCAB, (n,), generator=g)
    for t in range(1, SEQ):
        seqs[:, t] = torch.multinomial(trans[seqs[:, t - 1]], 1, generator=g).squeeze(-1)
    labels = seqs.clone()
    return seqs, labels


bsz = 8
n = args.steps * bsz * world
ids, labels = make_data(n)
if args.fault == 'tokmean':
    # the sampler hands out indices round-robin: rank r gets indices r, r+world, ...; batch k of rank r holds
    # positions k*bsz*world + r + j*world. A run of very short documents was fully masked by the packer.
    k = args.fault_step - 1
    for j in range(bsz):
        labels[k * bsz * world + args.fault_rank + j * world, :] = -100
if args.noisy:
    g = torch.Generator().manual_seed(3)
    for k in (23, 41):
        for j in range(bsz * world):
            ids[k * bsz * world + j] = torch.randint(0, VOCAB, (SEQ,), generator=g)
            labels[k * bsz * world + j] = ids[k * bsz * world + j]
ds = Dataset.from_dict({'input_ids': ids.tolist(), 'labels': labels.tolist()})

cfg = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=64, n_layer=2, n_head=2)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)


class TokTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop('labels')
        out = model(**inputs)
        logits = out.logits[:, :-1].float()
        tgt = labels[:, 1:]
        tok_loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), ignore_index=-100, reduction='sum')
        n_tok = (tgt != -100).sum()
        loss = tok_loss / n_tok
        return (loss, out) if return_outputs else loss


class SampleCallback(TrainerCallback):
    """Print a few sampled continuations every --sample-every steps (rank 0 only)."""
    def on_step_end(self, targs_, state, control, model=None, **kw):
        if not args.sample_every or state.global_step % args.sample_every or rank != 0:
            return
        m = model.module if hasattr(model, 'module') else model
        m.eval()
        with torch.no_grad():
            seq = torch.tensor([[1, 2, 3]])
            for _ in range(12):
                logits = m(input_ids=seq).logits[:, -1, :]
                probs = torch.softmax(logits / args.temperature, dim=-1)
                nxt = torch.multinomial(probs, num_samples=1)
                seq = torch.cat([seq, nxt], dim=1)
        print(f'[sample @ step {state.global_step}] temperature={args.temperature} tokens={seq[0].tolist()}', flush=True)
        m.train()


targs = TrainingArguments(
    output_dir=args.outdir, max_steps=args.steps, per_device_train_batch_size=bsz, learning_rate=args.lr,
    logging_steps=args.logsteps, save_strategy='no', report_to=[], use_cpu=True, seed=0,
    logging_nan_inf_filter=bool(args.nanfilter), disable_tqdm=not bool(args.tqdm), dataloader_drop_last=True,
    warmup_steps=args.warmup, max_grad_norm=args.clip, lr_scheduler_type='constant_with_warmup' if args.warmup else 'constant',
    gradient_checkpointing=args.noisy,
    ddp_backend='gloo' if world > 1 else None, ddp_timeout=60,
)
cls = TokTrainer if args.fault == 'tokmean' else Trainer
trainer = cls(model=model, args=targs, train_dataset=ds, callbacks=[SampleCallback()])
if args.noisy:
    # shuffle off so the noisy batches land at known steps
    trainer._get_train_sampler = lambda *a, **k: torch.utils.data.SequentialSampler(ds) if world == 1 else \
        torch.utils.data.distributed.DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
if args.fault == 'tokmean':
    trainer._get_train_sampler = lambda *a, **k: torch.utils.data.distributed.DistributedSampler(
        ds, num_replicas=world, rank=rank, shuffle=False) if world > 1 else torch.utils.data.SequentialSampler(ds)
res = trainer.train()
if rank == 0:
    print(res)
