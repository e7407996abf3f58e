"""Tiny causal-LM fine-tune with the HF Trainer. A local word-level tokenizer and a 2-layer GPT-2 built from config.
--fault none|hub-name|old-eval-kw|best-model|adamw-import|no-pad|lora-targets"""
import argparse, os, sys, json, logging, warnings
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--model", default="")
p.add_argument("--out", default="/work/rr142/jh/out/hf")
p.add_argument("--max-steps", type=int, default=30)
p.add_argument("--final-eval", default="rank0", help="rank0: evaluate only on the main process (original code); all: every rank")
a = p.parse_args()
import torch
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer, TrainingArguments,
                          DataCollatorForLanguageModeling, AutoModelForCausalLM, AutoTokenizer)
if a.fault == "adamw-import":
    from transformers import AdamW, get_linear_schedule_with_warmup
from datasets import Dataset

TOK_DIR = "/work/rr142/jh/tok"
def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    words = "the a model data train loss step gradient learns small tiny fast slow rank node batch token text".split()
    corpus = [" ".join(words[(i * 7 + j) % len(words)] for j in range(12)) for i in range(200)]
    tk = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
    t = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]")
    t.save_pretrained(TOK_DIR)
    with open(os.path.join(TOK_DIR, "corpus.json"), "w") as f: json.dump(corpus, f)

if not os.path.exists(os.path.join(TOK_DIR, "corpus.json")) and int(os.environ.get("LOCAL_RANK", "0")) == 0:
    build_tokenizer()
if a.model:
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model)
else:
    tok = PreTrainedTokenizerFast.from_pretrained(TOK_DIR)
    if a.fault != "no-pad":
        tok.pad_token = "[PAD]"
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64)
    model = GPT2LMHeadModel(cfg)
corpus = json.load(open(os.path.join(TOK_DIR, "corpus.json")))
# vary lengths so batches need padding
texts = [" ".join(c.split()[: 4 + (i % 8)]) for i, c in enumerate(corpus)]
ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])

if a.fault == "lora-targets":
    from peft import LoraConfig, get_peft_model
    lcfg = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.05, task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)
    model.print_trainable_parameters()

kw = dict(output_dir=a.out, per_device_train_batch_size=8, max_steps=a.max_steps, logging_steps=5,
          learning_rate=5e-4, report_to=[], save_steps=1000, use_cpu=True, dataloader_num_workers=0)
if a.fault == "old-eval-kw":
    kw.update(evaluation_strategy="steps", eval_steps=10)
elif a.fault == "best-model":
    kw.update(eval_strategy="epoch", save_strategy="steps", save_steps=10, load_best_model_at_end=True,
              metric_for_best_model="eval_loss")
else:
    kw.update(eval_strategy="steps", eval_steps=15)
args = TrainingArguments(**kw)
split = ds.train_test_split(test_size=0.1, seed=0)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=args, train_dataset=split["train"], eval_dataset=split["test"], data_collator=collator)
trainer.train()
if a.final_eval == "all":
    m = trainer.evaluate()
    if trainer.is_world_process_zero():
        print("final eval:", m)
elif trainer.is_world_process_zero():
    print("final eval:", trainer.evaluate())
