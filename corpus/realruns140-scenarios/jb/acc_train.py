"""accelerate-launched training of a tiny GPT-2 on random token ids (CPU, gloo)."""
import argparse, os, time, json
p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=300)
p.add_argument('--pid-dir', default=None)
p.add_argument('--pause', type=float, default=0.1)
args = p.parse_args()
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel

acc = Accelerator()
print(f'[{acc.process_index}] distributed_type={acc.distributed_type} num_processes={acc.num_processes} pid={os.getpid()}', flush=True)
if args.pid_dir:
    os.makedirs(args.pid_dir, exist_ok=True)
    open(os.path.join(args.pid_dir, f'rank{acc.process_index}.pid'), 'w').write(str(os.getpid()))
set_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64))
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
ids = torch.randint(0, 512, (2048, 32))
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids), batch_size=8, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
step = 0
while step < args.steps:
    for (x,) in dl:
        loss = model(input_ids=x, labels=x).loss
        acc.backward(loss); opt.step(); opt.zero_grad()
        if step % 10 == 0:
            l = acc.gather(loss.detach()).mean().item()
            acc.print(json.dumps({'step': step, 'loss': round(l, 4), 'lr': 3e-4}))
        step += 1
        time.sleep(args.pause)
        if step >= args.steps:
            break
acc.wait_for_everyone()
acc.print('done')
