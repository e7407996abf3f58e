"""Single-process tiny GPT-2 LM training (no downloads: model from config, char tokenizer built locally)."""
import argparse, math, os, sys, time, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=120)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--fault", default="none")
p.add_argument("--step-sleep", type=float, default=0.0)
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)
text = ("the quick brown fox jumps over the lazy dog while the small model learns to predict characters. " * 40)
chars = sorted(set(text)); stoi = {c: i for i, c in enumerate(chars)}
ids = torch.tensor([stoi[c] for c in text])
cfg = GPT2Config(vocab_size=len(chars), n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg)
print(f"model params: {sum(p.numel() for p in model.parameters())/1e3:.1f}K vocab={len(chars)}", flush=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
steps_per_epoch = args.steps
total = args.steps * args.epochs
if args.fault == "onecycle":
    # total_steps computed from len(dataset)//batch instead of the per-epoch step count
    total = args.steps
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=total)
model.train()
step = 0
for epoch in range(args.epochs):
    pbar = tqdm(range(steps_per_epoch), desc=f"epoch {epoch}", mininterval=0.3)
    for i in pbar:
        idx = torch.randint(0, len(ids) - 33, (8,))
        x = torch.stack([ids[j:j + 32] for j in idx])
        out = model(input_ids=x, labels=x)
        opt.zero_grad(); out.loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); step += 1
        pbar.set_postfix(loss=f"{out.loss.item():.3f}", lr=f"{sched.get_last_lr()[0]:.2e}", gnorm=f"{gn:.2f}")
        if args.step_sleep: time.sleep(args.step_sleep)
    print(f"epoch {epoch}: loss {out.loss.item():.4f} ppl {math.exp(out.loss.item()):.2f}", flush=True)
model.eval()
prompt = torch.tensor([[stoi[c] for c in "the quick"]])
gen = model.generate(prompt, max_new_tokens=20, do_sample=False)
print("sample:", "".join(chars[i] for i in gen[0].tolist()), flush=True)
os.makedirs("/work/rr53/c/out_gpt2", exist_ok=True)
model.save_pretrained("/work/rr53/c/out_gpt2")
print("saved /work/rr53/c/out_gpt2", flush=True)
