"""TRL trainers (SFT / GRPO / DPO) on a tiny local GPT-2. --fault selects the mistake."""
import argparse, os, sys, re
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jlcommon import make_tokenizer, make_gpt2, sentences, WORDS

p = argparse.ArgumentParser()
p.add_argument("--trainer", default="sft", choices=["sft", "grpo", "dpo"])
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--out", default="out/trl")
a = p.parse_args()

import datasets, torch
tok = make_tokenizer()
model = make_gpt2(vocab_size=len(tok))
rank = int(os.environ.get("RANK", 0))
common = dict(output_dir=a.out, max_steps=a.steps, logging_steps=2, report_to="none", use_cpu=True,
              save_strategy="no", ddp_timeout=60, learning_rate=1e-3)

if a.trainer == "sft":
    from trl import SFTTrainer, SFTConfig
    if a.fault == "conversational":
        # dataset exported in chat format; the tiny base tokenizer has no chat template
        rows = [{"messages": [{"role": "user", "content": s}, {"role": "assistant", "content": t}]}
                for s, t in zip(sentences(64, seed=4), sentences(64, seed=5))]
        ds = datasets.Dataset.from_list(rows)
    else:
        ds = datasets.Dataset.from_dict({"text": sentences(128, seed=4)})
    cfg = SFTConfig(per_device_train_batch_size=8, max_length=32, **common)
    tr = SFTTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)
elif a.trainer == "grpo":
    from trl import GRPOTrainer, GRPOConfig
    prompts = [f"what is {WORDS[30 + i % 10]} plus {WORDS[30 + (i * 3) % 10]}" for i in range(64)]
    ds = datasets.Dataset.from_dict({"prompt": prompts, "answer": [str(i % 10) for i in range(64)]})
    NUM = {w: i + 1 for i, w in enumerate(WORDS[30:40])}
    def correctness_reward(prompts, completions, answer, **kw):
        rewards = []
        for c, ans in zip(completions, answer):
            last = c.strip().split()[-1]          # model's final token is its answer
            if a.fault == "reward-parse":
                rewards.append(1.0 if int(last) == int(ans) else 0.0)
            else:
                rewards.append(1.0 if NUM.get(last, -1) == int(ans) else 0.0)
        return rewards
    def length_reward(completions, **kw):
        return [-abs(len(c.split()) - 4) / 4 for c in completions]
    cfg = GRPOConfig(per_device_train_batch_size=4, num_generations=4, max_completion_length=8,
                     **common)
    tr = GRPOTrainer(model=model, reward_funcs=[correctness_reward, length_reward], args=cfg,
                     train_dataset=ds, processing_class=tok)
else:
    from trl import DPOTrainer, DPOConfig
    ds = datasets.Dataset.from_dict({"prompt": sentences(64, seed=6, lo=3, hi=5),
                                     "chosen": sentences(64, seed=7, lo=3, hi=6),
                                     "rejected": sentences(64, seed=8, lo=3, hi=6)})
    cfg = DPOConfig(per_device_train_batch_size=4, max_length=32, **common)
    tr = DPOTrainer(model=model, args=cfg, train_dataset=ds, processing_class=tok)

tr.train()
print(f"[rank{rank}] {a.trainer} training finished", flush=True)
