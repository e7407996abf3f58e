"""Custom accelerate training loop for a tiny GPT-2 LM built from config. --fault selects the mistake."""
import argparse, os, time, math
import torch
from torch.utils.data import DataLoader
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup
import logging
import common

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--init", default=None, help="initial weights (torch.save'd state_dict)")
p.add_argument("--init-dir", default=None, help="per-node local copy dir of init weights: <dir>/rank<k>/init.pt")
p.add_argument("--mixed-precision", default=None)
p.add_argument("--pidfile", default=None)
args = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
logger = get_logger(__name__)
acc = Accelerator(cpu=True, mixed_precision=args.mixed_precision) if args.mixed_precision else Accelerator(cpu=True)
set_seed(0)
rank = acc.process_index
if args.pidfile and rank == args.fault_rank:
    open(args.pidfile, "w").write(str(os.getpid()))

tok = common.build_tokenizer()
n_layer = 2
if args.fault == "model-mismatch":
    # each node reads its own copy of the run config; the copy on this node still says 3 layers
    n_layer = 3 if rank == args.fault_rank else 2
cfg = GPT2Config(vocab_size=len(tok), n_layer=n_layer, n_embd=64, n_head=2, n_positions=64,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
model = GPT2LMHeadModel(cfg)
if args.fault == "unused-head":
    # value head for a later RLHF stage, attached now but only used by the (not yet written) PPO loop
    model.value_head = torch.nn.Linear(cfg.n_embd, 1)
init_path = args.init
if args.init_dir:
    init_path = os.path.join(args.init_dir, f"rank{rank}", "init.pt")
if init_path:
    logger.info(f"loading initial weights from {init_path}", main_process_only=False)
    sd = torch.load(init_path, map_location="cpu")
    model.load_state_dict(sd)

texts = common.sentences(400, seed=3)
enc = tok(texts, truncation=True, max_length=16, padding="max_length", return_tensors="pt")
items = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i]} for i in range(len(texts))]
dl = DataLoader(items, batch_size=8, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = get_linear_schedule_with_warmup(opt, 2, args.steps)
model, opt, dl, sched = acc.prepare(model, opt, dl, sched)
logger.info(f"num processes {acc.num_processes}, mixed precision {acc.mixed_precision}, device {acc.device}")

step = 0
model.train()
while step < args.steps:
    for batch in dl:
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["input_ids"])
        acc.backward(out.loss)
        opt.step(); sched.step(); opt.zero_grad()
        step += 1
        if args.fault == "slow" and rank == args.fault_rank:
            time.sleep(0.5)
        if step % 4 == 0:
            loss = acc.gather(out.loss.detach().reshape(1)).mean().item()
            logger.info(f"step {step} loss {loss:.4f} ppl {math.exp(loss):.1f} lr {sched.get_last_lr()[0]:.2e}")
        if step >= args.steps:
            break

# evaluation: per-sample token losses on this rank's share of the held-out sentences
model.eval()
held = common.sentences(30, seed=9)
share = held[rank::acc.num_processes]
with torch.no_grad():
    e = tok(share, truncation=True, max_length=16, padding="max_length", return_tensors="pt")
    logits = model(input_ids=e["input_ids"], attention_mask=e["attention_mask"]).logits
    per_tok = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), e["input_ids"][:, 1:], reduction="none")
    per_sample = (per_tok * e["attention_mask"][:, 1:]).sum(1) / e["attention_mask"][:, 1:].sum(1)
if args.fault == "gather-mismatch":
    all_losses = acc.gather(per_sample)          # shares have different lengths on different ranks
else:
    all_losses = acc.gather_for_metrics(acc.pad_across_processes(per_sample))
logger.info(f"eval mean loss {all_losses.mean().item():.4f} over {all_losses.numel()} samples")
acc.wait_for_everyone()
acc.end_training()
