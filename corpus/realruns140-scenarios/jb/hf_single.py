"""Single-process HF Trainer run of a tiny GPT-2 on a locally built dataset (no downloads)."""
import argparse, os, warnings
p = argparse.ArgumentParser()
p.add_argument('--max-steps', type=int, default=60)
p.add_argument('--out', default='run/hf_out')
p.add_argument('--samples', type=int, default=512)
p.add_argument('--save-steps', type=int, default=0)
p.add_argument('--step-pause', type=float, default=0.0)
args = p.parse_args()
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import time, torch
from datasets import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, TrainerCallback

cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
model = GPT2LMHeadModel(cfg)
g = torch.Generator().manual_seed(0)
ids = torch.randint(0, 512, (args.samples, 32), generator=g).tolist()
ds = Dataset.from_dict({'input_ids': ids, 'labels': ids}).train_test_split(test_size=0.1, seed=0)

class Pause(TrainerCallback):
    def on_step_end(self, a, s, c, **kw):
        if args.step_pause:
            time.sleep(args.step_pause)

ta = TrainingArguments(output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=8,
                       logging_steps=5, eval_strategy='steps', eval_steps=20, report_to=[],
                       save_strategy='steps' if args.save_steps else 'no', save_steps=args.save_steps or 500,
                       learning_rate=5e-4, warmup_steps=5, use_cpu=True, dataloader_num_workers=0,
                       disable_tqdm=False)
tr = Trainer(model=model, args=ta, train_dataset=ds['train'], eval_dataset=ds['test'], callbacks=[Pause()])
tr.train()
print('final eval:', tr.evaluate())
