"""TRL SFTTrainer / DPOTrainer on a tiny GPT-2 (CPU); --fault picks the problem."""
import argparse, os, sys
sys.path.insert(0, os.path.dirname(__file__))
from tinyhf import make_tokenizer, make_model, sentences
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--mode", default="sft", choices=["sft", "dpo"])
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--out", default="/tmp/rr96eq_trl")
a = p.parse_args()
RANK = int(os.environ.get("RANK", "0"))

from trl import SFTConfig, SFTTrainer, DPOConfig, DPOTrainer
tok = make_tokenizer()
if a.fault != "no_template":
    tok.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} [EOS] {% endfor %}"
                         "{% if add_generation_prompt %}assistant {% endif %}")
model = make_model()
S = sentences(64, seed=3)
kw = dict(output_dir=a.out, per_device_train_batch_size=4, learning_rate=5e-4, max_steps=a.steps, logging_steps=2,
          save_strategy="no", report_to=[], use_cpu=True, ddp_timeout=30, seed=0, max_length=48)
if "WORLD_SIZE" in os.environ:
    kw["ddp_backend"] = "gloo"

if a.mode == "sft":
    ds = Dataset.from_dict({"messages": [[{"role": "user", "content": S[i]},
                                           {"role": "assistant", "content": S[i + 1]}] for i in range(0, 64, 2)]})
    trainer = SFTTrainer(model=model, args=SFTConfig(**kw), train_dataset=ds, processing_class=tok)
else:
    d = {"prompt": [S[i] for i in range(0, 60, 3)], "chosen": [S[i + 1] for i in range(0, 60, 3)],
         "rejected": [S[i + 2] for i in range(0, 60, 3)]}
    if a.fault == "dpo_renamed":
        d["response_rejected"] = d.pop("rejected")   # column renamed by an upstream preprocessing step
    ds = Dataset.from_dict(d)
    ref = make_model()
    trainer = DPOTrainer(model=model, ref_model=ref, args=DPOConfig(beta=0.1, **kw), train_dataset=ds,
                         processing_class=tok)
res = trainer.train()
print(f"[rank{RANK}] {a.mode} done: {res.metrics}", flush=True)
