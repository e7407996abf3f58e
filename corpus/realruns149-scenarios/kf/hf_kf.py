"""Tiny GPT-2 HF Trainer run. --mode healthy | bad_strategy"""
import argparse, os, warnings, logging
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, logging as hflog
from datasets import Dataset

p = argparse.ArgumentParser(); p.add_argument("--mode", default="healthy"); p.add_argument("--out", default="hf_out")
a = p.parse_args()
hflog.set_verbosity_info()
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128, n_positions=64)
model = GPT2LMHeadModel(cfg)
ids = torch.randint(0, 128, (96, 32))
ds = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
ev = ds.select(range(16))
kw = dict(output_dir=a.out, per_device_train_batch_size=8, num_train_epochs=1, logging_steps=3,
          report_to=[], use_cpu=True, save_steps=6, eval_steps=6, eval_strategy="steps", save_strategy="steps",
          logging_nan_inf_filter=False, disable_tqdm=False)
if a.mode == "bad_strategy":
    kw.update(save_strategy="epoch", load_best_model_at_end=True)
args = TrainingArguments(**kw)
from transformers import TrainerCallback
import urllib.request, json, sys
class Red(logging.Formatter):
    def format(self, r):
        m = super().format(r)
        return ("\033[31m" + m + "\033[0m") if r.levelno >= logging.WARNING else m
h = logging.StreamHandler(sys.stdout); h.setFormatter(Red("%(asctime)s %(levelname)s %(name)s: %(message)s"))
mlog = logging.getLogger("metrics_push"); mlog.addHandler(h); mlog.propagate = False
class PushMetrics(TrainerCallback):
    """Best-effort push of metrics to a local dashboard; failures must not stop training."""
    def on_log(self, args, state, control, logs=None, **kw):
        try:
            req = urllib.request.Request("http://127.0.0.1:48249/api/metrics", data=json.dumps(logs).encode(), method="POST")
            urllib.request.urlopen(req, timeout=1)
        except Exception:
            mlog.exception("could not push metrics at step %d (dashboard down?); continuing", state.global_step)

tr = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ev, callbacks=[PushMetrics()] if a.mode == "healthy" else [])
tr.train()
print(tr.evaluate())
