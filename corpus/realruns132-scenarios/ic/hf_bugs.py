"""Tiny GPT-2 fine-tune with the HF Trainer. --bug none | no_resize (tokenizer grew, embeddings not resized)"""
import os, sys
os.environ.setdefault('HF_HUB_OFFLINE', '1')
sys.path.insert(0, os.path.dirname(__file__))
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
from common import base_parser

class Toks(Dataset):
    def __init__(self, n, vocab, extra_from=None, extra_vocab=None):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (n, 32), generator=g)
        if extra_from is not None:
            # rows after extra_from were tokenized with the new tokenizer (added <|user|>/<|bot|> tokens)
            self.x[extra_from:, 0] = extra_vocab - 1
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return {'input_ids': self.x[i], 'labels': self.x[i].clone()}

if __name__ == '__main__':
    args = base_parser().parse_args()
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
    model = GPT2LMHeadModel(cfg)
    if args.bug == 'no_resize':
        ds = Toks(256, 256, extra_from=8 * args.bug_step, extra_vocab=258)
    else:
        ds = Toks(256, 256)
    ta = TrainingArguments(output_dir='out/hf_' + args.bug, per_device_train_batch_size=8, max_steps=args.steps,
                           logging_steps=4, save_strategy='no', report_to=[], use_cpu=True, learning_rate=5e-4,
                           dataloader_num_workers=0, disable_tqdm=False)
    Trainer(model=model, args=ta, train_dataset=ds).train()
    print('finished')
