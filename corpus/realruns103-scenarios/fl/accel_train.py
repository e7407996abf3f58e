"""Custom training loop with HF accelerate (DDP or FSDP) on a tiny GPT-2.
Launch with torchrun (several ranks) or accelerate launch.  --fault selects the bug/misconfiguration."""
import argparse, os, sys, logging, time
sys.path.insert(0, os.path.dirname(__file__))
import tinyhf
import torch
from datetime import timedelta
from torch.utils.data import DataLoader
from accelerate import Accelerator, InitProcessGroupKwargs
from accelerate.logging import get_logger
from accelerate.utils import set_seed
from transformers import DataCollatorForLanguageModeling
from tqdm.auto import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=6)
p.add_argument("--steps", type=int, default=16)
p.add_argument("--fsdp", action="store_true")
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--mixed-precision", default="no")
p.add_argument("--grad-accum", type=int, default=2)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=4)
p.add_argument("--out", default="runs/accel")
p.add_argument("--save-every", type=int, default=8)
p.add_argument("--run-name", default=None)
p.add_argument("--notes", default="")
p.add_argument("--no-init-kwargs", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--pid-dir", default=None)
a = p.parse_args()

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", datefmt="%m/%d/%Y %H:%M:%S",
                    level=logging.INFO)
logger = get_logger("run_clm_no_trainer")

kwargs = [InitProcessGroupKwargs(timeout=timedelta(seconds=40), backend="gloo")]
fsdp_plugin = None
if a.no_init_kwargs:
    kwargs = []
if a.fsdp:
    from accelerate import FullyShardedDataParallelPlugin
    fsdp_plugin = FullyShardedDataParallelPlugin(fsdp_version=1, use_orig_params=False,
                                                 auto_wrap_policy="NO_WRAP", cpu_ram_efficient_loading=False,
                                                 sync_module_states=False)
accelerator = Accelerator(gradient_accumulation_steps=a.grad_accum, mixed_precision=a.mixed_precision,
                          kwargs_handlers=kwargs, fsdp_plugin=fsdp_plugin, cpu=True)
logger.info(accelerator.state, main_process_only=False)
set_seed(0)
if a.pid_dir:
    os.makedirs(a.pid_dir, exist_ok=True)
    open(os.path.join(a.pid_dir, f"rank{accelerator.process_index}.pid"), "w").write(str(os.getpid()))

tok = tinyhf.make_tokenizer()
model = tinyhf.make_model(len(tok))
if a.freeze_embeddings:
    model.transformer.wte.weight.requires_grad_(False)
    model.transformer.wpe.weight.requires_grad_(False)
texts = tinyhf.make_texts(160, seed=5)
feats = [tok(t, truncation=True, max_length=32) for t in texts]
dl = DataLoader(feats, batch_size=4, shuffle=True, collate_fn=DataCollatorForLanguageModeling(tok, mlm=False))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=a.lr)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / a.warmup))
model, opt, dl, sched = accelerator.prepare(model, opt, dl, sched)

run_name = a.run_name or "clm"
if run_name == "auto":  # encode the whole config in the run name so sweeps are self-describing
    run_name = "clm-" + "-".join(f"{k}_{v}" for k, v in sorted(vars(a).items()) if k not in ("run_name", "out")).replace("/", "_").replace(" ", "_")
logger.info("***** Running training *****")
logger.info(f"  Num examples = {len(feats)}")
logger.info(f"  Gradient Accumulation steps = {a.grad_accum}")
logger.info(f"  Total optimization steps = {a.steps}")
bar = tqdm(range(a.steps), disable=not accelerator.is_local_main_process)
step = 0
while step < a.steps:
    for batch in dl:
        with accelerator.accumulate(model):
            out = model(**batch)
            accelerator.backward(out.loss)
            opt.step(); sched.step(); opt.zero_grad()
        if accelerator.sync_gradients:
            step += 1
            time.sleep(a.step_sleep)
            bar.update(1)
            if step % 4 == 0:
                loss = accelerator.gather(out.loss.detach()).mean().item()
                logger.info(f"step {step}: loss {loss:.4f} lr {sched.get_last_lr()[0]:.2e}")
            if step % a.save_every == 0:
                ckdir = os.path.join(a.out, run_name, f"step_{step}")
                accelerator.save_state(ckdir)
                logger.info(f"saved state to {ckdir}")
            if step >= a.steps:
                break
accelerator.wait_for_everyone()
if accelerator.is_main_process:
    if a.fault == "unwrap":
        model.config.save_pretrained(os.path.join(a.out, run_name, "final"))
        torch.save(model.state_dict(), os.path.join(a.out, run_name, "final", "pytorch_model.bin"))
    else:
        accelerator.unwrap_model(model).save_pretrained(os.path.join(a.out, run_name, "final"))
    logger.info("final model written")
accelerator.end_training()
