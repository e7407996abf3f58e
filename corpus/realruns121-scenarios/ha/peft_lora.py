"""LoRA fine-tuning of a tiny GPT-2 with PEFT, plain torch loop (optionally DDP under torchrun)."""
import argparse, os, sys, time, logging
from datetime import timedelta
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import make_tokenizer, make_model, sentences

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--targets", default="c_attn")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--adapter-dir", default="adapter_out")
p.add_argument("--base-embd", type=int, default=64)
p.add_argument("--grad-ckpt", action="store_true")
p.add_argument("--pylog", action="store_true")
a = p.parse_args()

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("lora_ft")

import torch
import torch.distributed as dist
from peft import LoraConfig, get_peft_model, PeftModel, TaskType

ddp = "RANK" in os.environ
if ddp:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank() if ddp else 0
world = dist.get_world_size() if ddp else 1
torch.manual_seed(0)

tok = make_tokenizer(pad=True)
base = make_model(tok, n_embd=a.base_embd)
log.info("rank %d/%d: base model %.2fM params", rank, world,
         sum(p.numel() for p in base.parameters()) / 1e6)

if a.fault == "loadadapter":
    # resume from a LoRA adapter saved by an earlier run
    model = PeftModel.from_pretrained(base, a.adapter_dir, is_trainable=True)
else:
    cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, lora_dropout=0.05,
                     target_modules=a.targets.split(","))
    model = get_peft_model(base, cfg)
if rank == 0:
    model.print_trainable_parameters()
if a.grad_ckpt:
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.config.use_cache = False

if ddp:
    model = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
texts = sentences(64 * world, seed=3)[rank::world]
model.train()
for step in range(a.steps):
    batch = tok(texts[(step * 4) % 60:(step * 4) % 60 + 4], padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    out = model(**batch, labels=labels)
    out.loss.backward()
    opt.step(); opt.zero_grad()
    if step % 5 == 0:
        log.info("rank %d step %d loss %.4f", rank, step, out.loss.item())
if rank == 0:
    m = model.module if ddp else model
    m.save_pretrained(a.adapter_dir)
    log.info("adapter saved to %s", a.adapter_dir)
if ddp:
    dist.barrier()
    dist.destroy_process_group()
