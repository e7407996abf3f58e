"""SFT + LoRA fine-tuning of a tiny local GPT2/Llama with TRL's SFTTrainer.
Flags pick a misconfiguration (--fault), the rank it hits (--fault-rank) and the step (--fault-step)."""
import argparse, os, sys, warnings
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf

ap = argparse.ArgumentParser()
ap.add_argument("--arch", default="gpt2", choices=["gpt2", "llama"])
ap.add_argument("--fault", default="none")
ap.add_argument("--fault-rank", type=int, default=1)
ap.add_argument("--fault-step", type=int, default=3)
ap.add_argument("--out", default="out/sft")
ap.add_argument("--steps", type=int, default=12)
ap.add_argument("--targets", default="")
ap.add_argument("--data", default="text", choices=["text", "prompt_completion", "messages", "jsonl"])
ap.add_argument("--data-file", default="")
ap.add_argument("--resume", default="")
ap.add_argument("--max-length", type=int, default=64)
ap.add_argument("--grad-accum", type=int, default=2)
ap.add_argument("--tokenizer-dir", default="")
ap.add_argument("--eval", action="store_true")
ap.add_argument("--gc", default="", help="gradient checkpointing: '' off, 'reentrant', 'nonreentrant'")
ap.add_argument("--find-unused", default="auto")
ap.add_argument("--lora-r", type=int, default=8)
ap.add_argument("--step-sleep", type=float, default=0.0)
ap.add_argument("--ts-logging", action="store_true")
ap.add_argument("--metric", default="")
ap.add_argument("--tok-max", type=int, default=0)
ap.add_argument("--extra", default="", help="comma list of extra TrainingArguments k=v")
args = ap.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))

import logging
if args.ts_logging:
    import transformers
    logging.basicConfig(format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s", level=logging.INFO)
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()
    transformers.utils.logging.set_verbosity_info()
log = logging.getLogger("sft_lora")
log.info("world_size=%d arch=%s targets=%s lora_r=%d resume=%s", world, args.arch, args.targets or "default", args.lora_r, args.resume or "-")

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from trl import SFTConfig, SFTTrainer
from transformers import TrainerCallback

if args.tokenizer_dir:
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.tokenizer_dir)
else:
    tok = tinyhf.build_tokenizer(chat_template=(args.fault != "no-chat-template"),
                                 with_pad=(args.fault != "no-pad"))
if args.tok_max:
    tok.model_max_length = args.tok_max
model = tinyhf.gpt2(tok) if args.arch == "gpt2" else tinyhf.llama(tok)
if args.fault == "add-tokens-no-resize":
    # chat markers added for the template after the model was built; embeddings never resized
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

if args.data == "text":
    ds = tinyhf.text_dataset(96)
elif args.data == "prompt_completion":
    ds = tinyhf.prompt_completion(96)
elif args.data == "messages":
    ds = tinyhf.conversations(96)
else:
    ds = load_dataset("json", data_files=args.data_file, split="train")

default_targets = {"gpt2": ["c_attn", "c_proj"], "llama": ["q_proj", "v_proj"]}[args.arch]
targets = args.targets.split(",") if args.targets else default_targets
lora = LoraConfig(r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.05, target_modules=targets, task_type="CAUSAL_LM")

extra = {}
for kv in filter(None, args.extra.split(",")):
    k, v = kv.split("=", 1)
    try:
        v = int(v)
    except ValueError:
        try:
            v = float(v)
        except ValueError:
            v = {"True": True, "False": False}.get(v, v)
    extra[k] = v

cfg = SFTConfig(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=4,
    gradient_accumulation_steps=args.grad_accum, learning_rate=2e-3, logging_steps=2,
    save_steps=6, save_strategy="steps", report_to="none", max_length=args.max_length,
    eval_strategy="steps" if args.eval else "no", eval_steps=6, per_device_eval_batch_size=4,
    dataloader_num_workers=0, seed=42, use_cpu=True, disable_tqdm=False,
    ddp_find_unused_parameters=None if args.find_unused == "auto" else args.find_unused == "true",
    **extra,
)
if args.gc:
    cfg.gradient_checkpointing = True
    cfg.gradient_checkpointing_kwargs = {"use_reentrant": args.gc == "reentrant"}

class Pace(TrainerCallback):
    """Slow the steps down (the toy model is too fast to be observed / signalled mid-run)."""
    def on_step_end(self, a, state, control, **kw):
        if args.step_sleep:
            import time
            time.sleep(args.step_sleep)
        return control

def token_accuracy(ev):
    import numpy as np
    preds = ev.predictions.argmax(-1)[:, :-1]
    labels = ev.label_ids[:, 1:]
    m = labels != -100
    acc = (preds[m] == labels[m]).mean()        # numpy float
    if args.metric == "np32":
        acc = acc.astype(np.float32)
    return {"token_acc": acc}

split = ds.train_test_split(test_size=16, seed=0) if args.eval else None
trainer = SFTTrainer(model=model, args=cfg, train_dataset=split["train"] if split else ds,
                     eval_dataset=split["test"] if split else None, processing_class=tok,
                     peft_config=lora, callbacks=[Pace()],
                     compute_metrics=token_accuracy if args.metric else None)
trainer.train(resume_from_checkpoint=args.resume or None)
trainer.save_model(args.out + "/final")
if rank == 0:
    print("training finished, adapter saved to", args.out + "/final")
