"""Tiny GPT-2 trained with the Hugging Face Trainer (CPU, offline); checkpoints, resume, reload, export."""
import argparse, os, sys, logging
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
import torch
from torch.utils.data import Dataset
import transformers
from transformers import (GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification,
                          Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument('--mode', default='train', choices=['train', 'finetune-cls', 'reload', 'export-safetensors'])
p.add_argument('--out', default='hf_out')
p.add_argument('--model-dir', default=None)
p.add_argument('--steps', type=int, default=30)
p.add_argument('--save-steps', type=int, default=10)
p.add_argument('--resume', default=None, help="'true' or a checkpoint folder")
p.add_argument('--n-layer', type=int, default=2)
p.add_argument('--vocab', type=int, default=256)
p.add_argument('--export-dir', default='hf_export')
args = p.parse_args()
torch.set_num_threads(1)
transformers.logging.set_verbosity_info() if os.environ.get('HF_VERBOSE') else None


class ToyLM(Dataset):
    def __init__(self, n=256, seq=32, vocab=256, labels=False):
        g = torch.Generator().manual_seed(0)
        start = torch.randint(0, vocab, (n, 1), generator=g)
        self.x = (start + torch.arange(seq) * 7) % vocab
        self.labels = labels
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        if self.labels:
            return {'input_ids': self.x[i], 'labels': int(self.x[i, 0] % 2)}
        return {'input_ids': self.x[i], 'labels': self.x[i]}


def targs(**kw):
    base = dict(output_dir=args.out, per_device_train_batch_size=8, learning_rate=3e-3, max_steps=args.steps,
                logging_steps=5, save_steps=args.save_steps, report_to='none', use_cpu=True,
                dataloader_num_workers=0, disable_tqdm=False, seed=0)
    base.update(kw)
    return TrainingArguments(**base)


if args.mode == 'train':
    cfg = GPT2Config(n_layer=args.n_layer, n_embd=64, n_head=4, vocab_size=args.vocab, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    tr = Trainer(model=model, args=targs(), train_dataset=ToyLM(vocab=args.vocab))
    resume = True if args.resume == 'true' else args.resume
    tr.train(resume_from_checkpoint=resume)
    tr.save_model(os.path.join(args.out, 'final'))
    print('saved final model to', os.path.join(args.out, 'final'))
elif args.mode == 'finetune-cls':
    model = GPT2ForSequenceClassification.from_pretrained(args.model_dir, num_labels=2)
    model.config.pad_token_id = 0
    tr = Trainer(model=model, args=targs(), train_dataset=ToyLM(labels=True, vocab=model.config.vocab_size))
    tr.train()
    print('fine-tuning done')
elif args.mode == 'reload':
    model = GPT2LMHeadModel.from_pretrained(args.model_dir)
    print(f'reloaded {args.model_dir}: {sum(p.numel() for p in model.parameters())/1e3:.1f}K params')
    tr = Trainer(model=model, args=targs(), train_dataset=ToyLM(vocab=model.config.vocab_size))
    tr.train()
    print('continued training done')
elif args.mode == 'export-safetensors':
    from safetensors.torch import save_file
    model = GPT2LMHeadModel.from_pretrained(args.model_dir)
    os.makedirs(args.export_dir, exist_ok=True)
    sd = model.state_dict()
    print(f'exporting {len(sd)} tensors to {args.export_dir}/model.safetensors')
    save_file(sd, os.path.join(args.export_dir, 'model.safetensors'), metadata={'format': 'pt'})
    print('export done')
