"""Custom accelerate training loop with checkpointing and a flaky metrics upload that retries.
--fault: none | save_state_ro (save_state into a directory the run cannot write)"""
import argparse, os, random, time, warnings
import torch, torch.nn as nn
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
import logging

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr54/j/tmp/acc")
p.add_argument("--steps", type=int, default=60)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
acc = Accelerator(log_with=None)
log = get_logger(__name__)
set_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
X = torch.randn(1024, 16); Y = (X[:, :4].argmax(1))
dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=16, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)

attempts = {"n": 0}


def upload_metrics(step, m):
    """pretend remote sink: first attempts time out"""
    attempts["n"] += 1
    if attempts["n"] % 3 == 1:
        raise ConnectionError(f"HTTPSConnectionPool(host='metrics.internal', port=443): Read timed out. (read timeout=2.0)")
    return True


step = 0
for x, y in dl:
    loss = nn.functional.cross_entropy(model(x), y)
    acc.backward(loss)
    opt.step(); opt.zero_grad()
    step += 1
    if step % 10 == 0:
        l = acc.gather(loss.detach()[None]).mean().item()
        log.info(f"step {step} loss {l:.4f}", main_process_only=True)
        for r in range(3):
            try:
                upload_metrics(step, {"loss": l})
                log.info(f"metrics for step {step} uploaded (attempt {r + 1})")
                break
            except ConnectionError as e:
                log.warning(f"metrics upload failed, retrying in 0.5s: {e}")
                time.sleep(0.5)
    if step % 25 == 0:
        d = os.path.join(args.out, f"step_{step}")
        acc.save_state(d)
    if step >= args.steps:
        break
acc.wait_for_everyone()
log.info("done", main_process_only=True)
acc.end_training()
