"""Tiny GPT-2 causal LM trained with a hand-written accelerate loop (accelerate launch, num_processes 2, CPU).
--fault selects the bug, --rank/--step where it bites."""
import argparse, os, json, math, time, random, logging, signal
import torch
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup, DataCollatorForLanguageModeling
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=10)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--out", default="/work/rr88/dl/runs/acc")
p.add_argument("--slow", type=float, default=0.0)
p.add_argument("--no-cpu-flag", action="store_true", help="omit Accelerator(cpu=True) (as in the GPU cluster version)")
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)
acc = Accelerator(cpu=not a.no_cpu_flag, gradient_accumulation_steps=2, log_with=None)
logger.info(acc.state, main_process_only=False)
set_seed(1234)

tok = AutoTokenizer.from_pretrained("/work/rr88/dl/assets/tok")
if a.fault == "vocab-oob":
    # domain tokens added for the new web-crawl source ... but resize_token_embeddings() was never called
    tok.add_tokens(["<url>", "<num>", "<email>"])
rows = [json.loads(l) for l in open("/work/rr88/dl/assets/reviews.jsonl")]
texts = [r["text"] for r in rows]
if a.fault == "vocab-oob" and acc.process_index == a.rank:
    # this rank's shard comes from the web-crawl source
    texts = [t + " see <url> or mail <email>" if i % 3 == 0 else t for i, t in enumerate(texts)]
enc = [tok(t, truncation=True, max_length=24) for t in texts]
coll = DataCollatorForLanguageModeling(tok, mlm=False)
dl = DataLoader(enc, batch_size=8, shuffle=True, collate_fn=coll)

cfg = GPT2Config(vocab_size=32, n_positions=64, n_embd=64, n_layer=2, n_head=2, bos_token_id=2, eos_token_id=3, pad_token_id=1)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
sched = get_linear_schedule_with_warmup(opt, 4, a.steps)
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)

logger.info("***** Running training *****")
logger.info(f"  Num examples = {len(enc)}  steps = {a.steps}  processes = {acc.num_processes}")
bar = tqdm(range(a.steps), disable=not acc.is_local_main_process)
step = 0
model.train()
while step < a.steps:
    for batch in dl:
        with acc.accumulate(model):
            out = model(**batch)
            acc.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
        if acc.sync_gradients:
            step += 1; bar.update(1)
            if a.slow: time.sleep(a.slow)
            if step % 5 == 0:
                l = acc.gather(out.loss.detach()).mean().item()
                logger.info(f"step {step} loss {l:.4f} ppl {math.exp(l):.1f} lr {sched.get_last_lr()[0]:.2e}")
        if step >= a.steps:
            break
acc.wait_for_everyone()
acc.save_state(a.out)
logger.info("done; state saved to %s", a.out)
acc.end_training()
