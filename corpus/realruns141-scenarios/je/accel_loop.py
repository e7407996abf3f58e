"""Custom training loop with accelerate.Accelerator on a tiny GPT-2 classifier (CPU / gloo)."""
import os, sys, argparse, logging, time, math, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader
from datasets import Dataset
from accelerate import Accelerator
from accelerate.utils import set_seed, GradientAccumulationPlugin, InitProcessGroupKwargs
from datetime import timedelta
from accelerate.logging import get_logger
from transformers import GPT2Model, GPT2Config
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=8)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--pidfile", default=None)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--no-pg-kwargs", action="store_true")
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = get_logger("accel_loop")

acc_kw = {} if a.no_pg_kwargs else {"kwargs_handlers": [InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=40))]}
if a.fault == "gaconfig":
    acc_kw.update(gradient_accumulation_steps=4,
                  gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=2, sync_with_dataloader=False))
acc = Accelerator(**acc_kw)
log.info(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes} process_index={acc.process_index} device={acc.device}", main_process_only=False)
set_seed(0)
rank = acc.process_index

tok = tinyhf.make_tokenizer()

class Classifier(nn.Module):
    def __init__(self, cfg_kw):
        super().__init__()
        self.config = GPT2Config(**cfg_kw)
        self.body = GPT2Model(self.config)
        self.head = nn.Linear(self.config.n_embd, 3)
        self.aux_head = nn.Linear(self.config.n_embd, 1)   # length regression, auxiliary
    def forward(self, input_ids, attention_mask, aux_target=None):
        h = self.body(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1)
        out = {"logits": self.head(pooled)}
        if aux_target is not None:
            out["aux"] = self.aux_head(pooled).squeeze(-1)
        return out

cfg = dict(vocab_size=len(tok), n_positions=64, n_layer=2, n_embd=64, n_head=4, pad_token_id=tok.pad_token_id)
if a.fault == "oomeval":
    cfg.pop("vocab_size")   # forgot to pass the tokenizer's vocab: GPT2 default 50257
model = Classifier(cfg)
if a.fault == "bf16":
    model = model.to(torch.bfloat16)   # "halve memory" -- but features stay float32 below

texts = tinyhf.sentences(512, seed=3)
labels = [len(t.split()) % 3 for t in texts]
ds = Dataset.from_dict({"text": texts, "label": labels})
ds = ds.map(lambda b: tok(b["text"], padding="max_length", truncation=True, max_length=24), batched=True)
ds = ds.map(lambda b: {"aux_target": [float(len(t.split())) / 12 for t in b["text"]]}, batched=True)
ds.set_format("torch", columns=["input_ids", "attention_mask", "label", "aux_target"])
dl = DataLoader(ds, batch_size=16, shuffle=True)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
model, opt, dl = acc.prepare(model, opt, dl)

step = 0
bar = tqdm(total=a.steps, disable=not acc.is_local_main_process, desc="train")
model.train()
while step < a.steps:
    for batch in dl:
        with acc.accumulate(model):
            use_aux = True
            if a.fault == "unused" and rank == a.bad_rank and step >= a.at_step:
                use_aux = False   # aux target missing for this shard -> aux head skipped
            out = model(batch["input_ids"], batch["attention_mask"],
                        aux_target=batch["aux_target"] if use_aux else None)
            logits = out["logits"]
            if a.fault == "bf16":
                extra = torch.randn(logits.shape[0], 64, device=logits.device)  # float32 side features
                logits = logits + acc.unwrap_model(model).head(extra)
            loss = F.cross_entropy(logits.float(), batch["label"])
            if "aux" in out:
                loss = loss + 0.1 * F.mse_loss(out["aux"].float(), batch["aux_target"])
            acc.backward(loss)
            opt.step(); opt.zero_grad()
        step += 1
        if a.pidfile and rank == a.bad_rank and step == a.at_step:
            with open(a.pidfile, "w") as f: f.write(str(os.getpid()))
        if a.step_sleep:
            time.sleep(a.step_sleep)
        if step % 5 == 0:
            l = acc.gather(loss.detach()).mean().item()
            log.info(f"step {step} loss {l:.4f}")
            if a.fault == "attr" and acc.is_main_process:
                log.info(f"model width {model.config.n_embd}, lr {opt.param_groups[0]['lr']}")
        bar.update(1)
        if step >= a.steps:
            break
bar.close()
if a.fault == "oomeval":
    # evaluate the whole held-out split in one forward pass
    model.eval()
    with torch.no_grad():
        allb = ds[:512]
        body = acc.unwrap_model(model).body
        h = body(input_ids=allb["input_ids"].repeat(8, 1), attention_mask=allb["attention_mask"].repeat(8, 1)).last_hidden_state
        lm_logits = h @ body.wte.weight.T
        log.info(f"eval perplexity {torch.exp(F.cross_entropy(lm_logits[:, :-1].reshape(-1, lm_logits.size(-1)), allb['input_ids'].repeat(8,1)[:, 1:].reshape(-1))).item():.3f}")
acc.wait_for_everyone()
log.info("training finished")
acc.end_training()
