"""Tiny GPT-2 LM (config-built, no download) trained with HF Accelerate on CPU, with
thread-pool settings taken from the environment / flags.

  --intra N   torch.set_num_threads(N) after the model is built
"""
import argparse, logging, os, time
import torch
from accelerate import Accelerator
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=25)
p.add_argument("--intra", type=int, default=0)
args = p.parse_args()

acc = Accelerator(cpu=True)
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{acc.process_index}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("threads_train")
log.info("OMP_NUM_THREADS=%r MKL_NUM_THREADS=%r torch threads=%d interop=%d",
         os.environ.get("OMP_NUM_THREADS"), os.environ.get("MKL_NUM_THREADS"),
         torch.get_num_threads(), torch.get_num_interop_threads())
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64))
if args.intra:
    torch.set_num_threads(args.intra)
    log.info("set intra-op threads to %d", torch.get_num_threads())
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
model, opt = acc.prepare(model, opt)
g = torch.Generator().manual_seed(acc.process_index)
t0 = time.time()
for step in range(args.steps):
    ids = torch.randint(0, 512, (8, 32), generator=g)
    loss = model(input_ids=ids, labels=ids).loss
    acc.backward(loss)
    opt.step(); opt.zero_grad()
    if step % 5 == 0 or step == args.steps - 1:
        log.info("step %d loss %.4f tok/s %.0f", step, loss.item(), (step + 1) * 8 * 32 / (time.time() - t0))
acc.wait_for_everyone()
log.info("done")
acc.end_training()
