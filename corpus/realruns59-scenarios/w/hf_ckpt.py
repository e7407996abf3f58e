"""Tiny GPT-2 (built from config, offline) trained a few steps, checkpointed, reloaded."""
import argparse, os, sys, warnings
import torch
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--saver", default="save_pretrained", choices=["save_pretrained", "safetensors_save_file"])
p.add_argument("--reload", action="store_true")
p.add_argument("--fresh-optim", action="store_true", help="do not restore optimizer state on reload")
args = p.parse_args()

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
data = torch.randint(0, 256, (64, 32))
bar = tqdm(range(args.steps), desc="train", file=sys.stdout, mininterval=0)
for step in bar:
    batch = data[(step * 4) % 64:(step * 4) % 64 + 4]
    out = model(input_ids=batch, labels=batch)
    out.loss.backward(); opt.step(); opt.zero_grad()
    bar.set_postfix(loss=f"{out.loss.item():.3f}")
os.makedirs(args.out, exist_ok=True)
if args.saver == "safetensors_save_file":
    from safetensors.torch import save_file
    save_file(model.state_dict(), os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
else:
    model.save_pretrained(args.out)
    torch.save(opt.state_dict(), os.path.join(args.out, "optimizer.pt"))
print(f"saved checkpoint to {args.out}", flush=True)
if args.reload:
    # reload into a model with a larger context window (resume with a config change)
    m2 = GPT2LMHeadModel.from_pretrained(args.out, n_positions=128, ignore_mismatched_sizes=True)
    opt2 = torch.optim.AdamW(m2.parameters(), lr=3e-4)
    if not args.fresh_optim:
        opt2.load_state_dict(torch.load(os.path.join(args.out, "optimizer.pt")))
    for step in tqdm(range(5), desc="resume", file=sys.stdout, mininterval=0):
        batch = data[step * 4:step * 4 + 4]
        out = m2(input_ids=batch, labels=batch)
        out.loss.backward(); opt2.step(); opt2.zero_grad()
    print(f"resumed ok, final loss {out.loss.item():.3f}", flush=True)
