"""Custom accelerate training loop (the 'no_trainer' example style) on a tiny GPT-2."""
import argparse, os, sys, math, time, logging, signal
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch.utils.data import DataLoader
from datasets import Dataset
from accelerate import Accelerator, InitProcessGroupKwargs
from datetime import timedelta
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import DataCollatorWithPadding, DataCollatorForLanguageModeling, get_scheduler
from tqdm.auto import tqdm
from common_tiny import build_tokenizer, build_model, make_texts, base_vocab_size

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=15)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--n", type=int, default=256)
p.add_argument("--out", default="/work/rr100/fb/work/acc_out")
p.add_argument("--mixed_precision", default=None)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    datefmt="%m/%d/%Y %H:%M:%S", level=logging.INFO)
logger = get_logger(__name__)
acc_kw = {}
if args.mixed_precision:
    acc_kw["mixed_precision"] = args.mixed_precision
accelerator = Accelerator(gradient_accumulation_steps=2, cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=45))], **acc_kw)
logger.info(accelerator.state, main_process_only=False)
set_seed(1234)

tok = build_tokenizer()
model = build_model()
raw = Dataset.from_dict({"text": make_texts(args.n, seed=7)})
with accelerator.main_process_first():
    ds = raw.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True,
                 remove_columns=["text"], desc="Running tokenizer on dataset")
split = ds.train_test_split(test_size=0.25, seed=3)
lm_collator = DataCollatorForLanguageModeling(tok, mlm=False)
train_dl = DataLoader(split["train"], shuffle=True, batch_size=8, collate_fn=lm_collator,
                      num_workers=args.workers)
eval_dl = DataLoader(split["test"], batch_size=8, collate_fn=lm_collator)

opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
steps = args.epochs * math.ceil(len(train_dl) / 2)
sched = get_scheduler("linear", opt, num_warmup_steps=2, num_training_steps=steps)
model, opt, train_dl, eval_dl, sched = accelerator.prepare(model, opt, train_dl, eval_dl, sched)
logger.info("***** Running training *****")
logger.info(f"  Num examples = {len(split['train'])}")
logger.info(f"  Num Epochs = {args.epochs}")
logger.info(f"  Total optimization steps = {steps}")
bar = tqdm(range(steps), disable=not accelerator.is_local_main_process)
gstep = 0
for epoch in range(args.epochs):
    model.train()
    for step, batch in enumerate(train_dl):
        with accelerator.accumulate(model):
            out = model(**batch)
            accelerator.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
        if accelerator.sync_gradients:
            gstep += 1
            bar.update(1)
            if gstep % 5 == 0:
                logger.info(f"epoch {epoch} step {gstep} loss {out.loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
            if args.fault == "kill_rank" and gstep == args.fault_step and accelerator.process_index == args.fault_rank:
                # stand-in for an external kill (OOM killer / operator): this process gets SIGKILL
                os.kill(os.getpid(), signal.SIGKILL)
    model.eval()
    losses, preds_all = [], []
    for batch in eval_dl:
        with torch.no_grad():
            out = model(**batch)
        losses.append(accelerator.gather_for_metrics(out.loss.repeat(batch["input_ids"].shape[0])))
        if args.fault == "gather_unpadded":
            # collect predictions for a BLEU-style metric; forgot accelerator.pad_across_processes
            preds = out.logits.argmax(-1)
            preds_all.append(accelerator.gather(preds).cpu())
    loss = torch.cat(losses).mean()
    logger.info(f"epoch {epoch}: perplexity: {math.exp(loss):.3f} eval_loss: {loss:.4f}")

accelerator.wait_for_everyone()
unwrapped = accelerator.unwrap_model(model)
unwrapped.save_pretrained(args.out, is_main_process=accelerator.is_main_process, save_function=accelerator.save)
if accelerator.is_main_process:
    tok.save_pretrained(args.out)
logger.info("Training finished")
accelerator.end_training()
