"""Tiny GPT-2 fine-tune with the HF Trainer (or Accelerate loop) on a locally built corpus.

Modes:
  trainer   - HF Trainer, healthy run full of alarming-looking warnings
  accel     - plain Accelerate loop with save_state/load_state every N steps; --resume DIR resumes
"""
import argparse, os, sys, math, warnings, logging
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
import torch

p = argparse.ArgumentParser()
p.add_argument('--mode', choices=['trainer', 'accel'], default='trainer')
p.add_argument('--out', default='/work/rr116/gl/run/hf_out')
p.add_argument('--steps', type=int, default=40)
p.add_argument('--save-every', type=int, default=0)
p.add_argument('--resume', default='')
a = p.parse_args()

from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

text = [f'the model {w} trains on shard {i % 7} with loss {i * 0.37 % 3:.2f} and {w}s' for i, w in
        enumerate(['gloo', 'rank', 'batch', 'token', 'epoch', 'node', 'store', 'bucket'] * 40)]
tk = Tokenizer(models.WordLevel(unk_token='[UNK]'))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tk.train_from_iterator(text, trainers.WordLevelTrainer(special_tokens=['[UNK]', '[PAD]', '[EOS]']))
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token='[UNK]', pad_token='[PAD]', eos_token='[EOS]')
cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
torch.manual_seed(0)
model = GPT2LMHeadModel(cfg)
enc = tok(text, padding='max_length', truncation=True, max_length=24, return_tensors='pt')


class DS(torch.utils.data.Dataset):
    def __len__(self):
        return len(text)

    def __getitem__(self, i):
        ids = enc['input_ids'][i]
        return {'input_ids': ids, 'attention_mask': enc['attention_mask'][i], 'labels': ids.clone()}


if a.mode == 'trainer':
    from transformers import Trainer, TrainingArguments
    args = TrainingArguments(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.steps,
                             logging_steps=5, save_strategy='no', report_to=[], use_cpu=True,
                             learning_rate=5e-4, warmup_steps=5, dataloader_num_workers=0,
                             disable_tqdm=False, fp16=False)
    tr = Trainer(model=model, args=args, train_dataset=DS())
    tr.train()
    print('final loss', tr.state.log_history[-1])
else:
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    acc = Accelerator(cpu=True)
    set_seed(0)
    dl = torch.utils.data.DataLoader(DS(), batch_size=8, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    model, opt, dl = acc.prepare(model, opt, dl)
    step = 0
    if a.resume:
        acc.print(f'resuming from {a.resume}')
        acc.load_state(a.resume)
        step = int(a.resume.rstrip('/').split('_')[-1])
    while step < a.steps:
        for batch in dl:
            out = model(**batch)
            acc.backward(out.loss)
            opt.step()
            opt.zero_grad()
            step += 1
            print(f'[proc {acc.process_index}] step {step} loss {out.loss.item():.4f}', flush=True)
            if a.save_every and step % a.save_every == 0:
                acc.save_state(f'{a.out}/step_{step}')
            if step >= a.steps:
                break
    acc.wait_for_everyone()
    acc.print('done')
