"""Fine-tune a local GPT-2 checkpoint directory; model size can be overridden from the command line.
First run with --make-ckpt to write the checkpoint directory."""
import argparse, os, time
from datetime import timedelta
import torch, torch.distributed as dist
from transformers import GPT2Config, GPT2LMHeadModel
p = argparse.ArgumentParser()
p.add_argument("--ckpt-dir", default="/work/rr142/jh/out/gpt2-tiny")
p.add_argument("--make-ckpt", action="store_true")
p.add_argument("--n-embd", type=int, default=None)
p.add_argument("--n-layer", type=int, default=None)
p.add_argument("--steps", type=int, default=20)
a = p.parse_args()
if a.make_ckpt:
    GPT2LMHeadModel(GPT2Config(vocab_size=512, n_layer=2, n_head=2, n_embd=64, n_positions=128)).save_pretrained(a.ckpt_dir)
    print("wrote", os.listdir(a.ckpt_dir)); raise SystemExit
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank()
overrides = {k: v for k, v in dict(n_embd=a.n_embd, n_layer=a.n_layer).items() if v is not None}
print(f"[rank{rank}] loading {a.ckpt_dir} with overrides {overrides}", flush=True)
model = GPT2LMHeadModel.from_pretrained(a.ckpt_dir, **overrides)
model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(1, a.steps + 1):
    ids = torch.randint(0, 512, (4, 32))
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0 and rank == 0:
        print(f"step {step} loss {loss.item():.3f}", flush=True)
dist.destroy_process_group()
