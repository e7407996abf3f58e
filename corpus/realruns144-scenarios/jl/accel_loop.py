"""Custom training loop with accelerate (tiny GPT-2 on local sentences). --fault selects the mistake."""
import argparse, os, sys, time, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jlcommon import make_tokenizer, make_gpt2, sentences

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--ckpt-dir", default="out/accel_ckpt")
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--grad-accum", type=int, default=2)
p.add_argument("--slow", type=float, default=0.0)
a = p.parse_args()

import torch
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.utils import GradientAccumulationPlugin, set_seed
from accelerate.logging import get_logger
from transformers import DataCollatorForLanguageModeling
from tqdm.auto import tqdm

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s - %(message)s", level=logging.INFO)
logger = get_logger("accel_loop")

kw = {}
if a.fault == "accum-plugin":
    # accumulation set twice: once directly, once through the plugin copied from another project
    kw = dict(gradient_accumulation_steps=a.grad_accum,
              gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=4, sync_with_dataloader=False))
else:
    kw = dict(gradient_accumulation_steps=a.grad_accum)
accelerator = Accelerator(**kw)
logger.info(f"distributed_type={accelerator.distributed_type} num_processes={accelerator.num_processes}", main_process_only=False)
logger.info(accelerator.state, main_process_only=True)
set_seed(0)

tok = make_tokenizer()
model = make_gpt2(vocab_size=len(tok))
if a.fault == "rank-shard":
    # each process reads its own pre-split shard of the corpus
    import datasets
    shard = os.path.join("data/shards", f"part-{accelerator.process_index:05d}.jsonl")
    logger.info(f"loading shard {shard}", main_process_only=False)
    texts = datasets.load_dataset("json", data_files=shard, split="train")["text"]
else:
    texts = sentences(512, seed=3)
enc = [tok(t, truncation=True, max_length=32) for t in texts]
coll = DataCollatorForLanguageModeling(tok, mlm=False)
dl = DataLoader(enc, batch_size=8, shuffle=True, collate_fn=coll)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))
model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)
accelerator.register_for_checkpointing(sched)

step = 0
bar = tqdm(total=a.steps, disable=not accelerator.is_local_main_process, desc="train")
while step < a.steps:
    for batch in dl:
        with accelerator.accumulate(model):
            out = model(**batch)
            accelerator.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
        if accelerator.sync_gradients:
            step += 1
            bar.update(1)
            if a.slow:
                time.sleep(a.slow)
            loss = accelerator.gather(out.loss.detach()).mean().item()
            if step % 5 == 0:
                logger.info(f"step {step} loss {loss:.4f} lr {sched.get_last_lr()[0]:.2e}")
            if step % a.save_every == 0:
                d = os.path.join(a.ckpt_dir, f"step_{step}")
                accelerator.save_state(d)
                logger.info(f"saved state to {d}")
            if step >= a.steps:
                break
bar.close()
accelerator.wait_for_everyone()
logger.info("training complete")
accelerator.end_training()
