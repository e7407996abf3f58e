"""accelerate-based regression trainer with per-process metric bookkeeping."""
import argparse, time
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
import logging

p = argparse.ArgumentParser()
p.add_argument('--steps', type=int, default=24)
p.add_argument('--window', type=int, default=8)
args = p.parse_args()
logging.basicConfig(format='%(asctime)s - %(levelname)s - %(name)s - %(message)s', level=logging.INFO)
acc = Accelerator()
log = get_logger(__name__)
log.info(acc.state, main_process_only=False)
torch.manual_seed(0)
X = torch.randn(2048, 8); Y = X @ torch.randn(8, 1)
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
model, opt, dl = acc.prepare(model, opt, dl)
history = {'loss': []}
if acc.is_main_process:
    history['throughput'] = []          # only the main process tracks throughput
t0 = time.time()
step = 0
for x, y in dl:
    loss = nn.functional.mse_loss(model(x), y)
    acc.backward(loss); opt.step(); opt.zero_grad()
    step += 1
    history['loss'].append(loss.item())
    if step % args.window == 0:
        sps = args.window * x.shape[0] / (time.time() - t0); t0 = time.time()
        history['throughput'].append(sps)
        mean = sum(history['loss'][-args.window:]) / args.window
        log.info(f'step {step} loss {mean:.4f} samples/s {sps:.0f}', main_process_only=False)
    if step >= args.steps: break
acc.wait_for_everyone()
log.info('done')
