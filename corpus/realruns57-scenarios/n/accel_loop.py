"""accelerate custom loop scenarios (tiny GPT2 from config).
accelerate launch --num_processes N accel_loop.py --fault NAME [--rank R] [--step S]"""
import argparse, os, sys, logging, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
from transformers import GPT2Config, GPT2LMHeadModel
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=4)
p.add_argument("--out", default="/work/rr57/n/runs/acc")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--accum", type=int, default=2)
p.add_argument("--mp", default="no")
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger(__name__)


def main():
    acc = Accelerator(gradient_accumulation_steps=a.accum, mixed_precision=a.mp)
    log.info(acc.state, main_process_only=False)
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=64, n_positions=32)
    model = GPT2LMHeadModel(cfg)
    g = torch.Generator().manual_seed(0)
    train = [{"input_ids": torch.randint(0, 64, (16,), generator=g)} for _ in range(96)]
    # eval set: variable-length prompts, bucketed by length so each batch is rectangular
    ev = []
    for L_ in (8, 8, 8, 8, 12, 12, 12, 12, 20, 20):
        ev.append({"input_ids": torch.randint(0, 64, (L_,), generator=g)})
    coll = lambda b: {"input_ids": torch.stack([x["input_ids"] for x in b])}
    dl = DataLoader(train, batch_size=4, shuffle=True, collate_fn=coll)
    edl = DataLoader(ev, batch_size=4, collate_fn=coll)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl, edl = acc.prepare(model, opt, dl, edl)
    step = 0
    bar = tqdm(total=a.steps, disable=not acc.is_local_main_process, desc="train")
    model.train()
    while step < a.steps:
        for batch in dl:
            with acc.accumulate(model):
                out = model(input_ids=batch["input_ids"], labels=batch["input_ids"])
                acc.backward(out.loss)
                opt.step(); opt.zero_grad()
            if acc.sync_gradients:
                step += 1
                bar.update(1)
                if step % 2 == 0:
                    log.info(f"step {step} loss {out.loss.item():.4f}")
                if a.fault in ("save_efbig",) and step == a.step:
                    acc.save_state(os.path.join(a.out, f"state-{step}"))
                    log.info(f"saved state at step {step}")
            if step >= a.steps:
                break
    bar.close()
    if a.fault in ("gather_ragged", "noisy_ok"):
        model.eval()
        all_logits = []
        for batch in edl:
            with torch.no_grad():
                logits = model(input_ids=batch["input_ids"]).logits
            if a.fault == "gather_ragged":
                all_logits.append(acc.gather(logits))  # bug: no pad_across_processes first
            else:
                all_logits.append(acc.gather_for_metrics(acc.pad_across_processes(logits, dim=1)))
        log.info(f"eval gathered {sum(x.shape[0] for x in all_logits)} rows")
    acc.wait_for_everyone()
    if acc.is_main_process:
        acc.save_state(os.path.join(a.out, "final"))
    log.info("done", main_process_only=False)
    acc.end_training()


if __name__ == "__main__":
    main()
