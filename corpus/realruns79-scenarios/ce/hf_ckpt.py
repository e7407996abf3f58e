"""Tiny GPT-2 trained with HF Accelerate; exercises save_pretrained / safetensors / save_state / resume.
Everything built locally (HF_HUB_OFFLINE=1)."""
import argparse, os, time, math
import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel, GPT2ForSequenceClassification
from transformers.utils import logging as hf_logging

p = argparse.ArgumentParser()
p.add_argument("--task", default="lm", choices=["lm", "cls"])
p.add_argument("--init-from", default=None, help="from_pretrained directory")
p.add_argument("--out", default="hf_out")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--save-mode", default="save_pretrained", choices=["save_pretrained", "safetensors", "state"])
p.add_argument("--resume-state", default=None)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--n-layer", type=int, default=2)
args = p.parse_args()

hf_logging.set_verbosity_warning()
acc = Accelerator(cpu=True)
set_seed(0)
cfg = GPT2Config(vocab_size=512, n_positions=64, n_embd=args.n_embd, n_layer=args.n_layer, n_head=4, pad_token_id=0, num_labels=3)
if args.init_from:
    cls = GPT2ForSequenceClassification if args.task == "cls" else GPT2LMHeadModel
    model = cls.from_pretrained(args.init_from, num_labels=3) if args.task == "cls" else cls.from_pretrained(args.init_from)
else:
    model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(acc.process_index)
ids = torch.randint(1, 512, (128, 32), generator=g)
labels = torch.randint(0, 3, (128,), generator=g)
ds = torch.utils.data.TensorDataset(ids, labels)
dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
model, opt, dl = acc.prepare(model, opt, dl)
start = 0
if args.resume_state:
    acc.load_state(args.resume_state)
    start = int(open(os.path.join(args.resume_state, "step.txt")).read())
    acc.print(f"resumed accelerator state from {args.resume_state} at step {start}")

acc.print(f"num_processes={acc.num_processes} params={sum(p.numel() for p in model.parameters())}")
step = start
t0 = time.time()
while step < args.steps:
    for x, y in dl:
        if args.task == "cls":
            out = model(input_ids=x, labels=y)
        else:
            out = model(input_ids=x, labels=x)
        acc.backward(out.loss)
        opt.step(); opt.zero_grad()
        step += 1
        if step % 5 == 0:
            loss = acc.gather(out.loss.detach()).mean().item()
            acc.print(f"{{'step': {step}, 'loss': {loss:.4f}, 'ppl': {math.exp(min(loss, 20)):.1f}, 'sec': {time.time()-t0:.1f}}}")
        if step % args.save_every == 0:
            d = os.path.join(args.out, f"checkpoint-{step}")
            acc.wait_for_everyone()
            if args.save_mode == "state":
                acc.save_state(d)
                if acc.is_main_process:
                    open(os.path.join(d, "step.txt"), "w").write(str(step))
            elif acc.is_main_process:
                unwrapped = acc.unwrap_model(model)
                if args.save_mode == "safetensors":
                    from safetensors.torch import save_file
                    os.makedirs(d, exist_ok=True)
                    save_file(unwrapped.state_dict(), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
                    unwrapped.config.save_pretrained(d)
                else:
                    unwrapped.save_pretrained(d)
            acc.wait_for_everyone()
            acc.print(f"saved {d}")
        if step >= args.steps:
            break
acc.print("training finished")
acc.end_training()
