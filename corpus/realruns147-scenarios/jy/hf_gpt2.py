"""Tiny GPT-2 causal-LM fine-tune with the HF Trainer under torchrun (CPU, gloo), built offline.

--fault none | nopad | bestmodel | lora_targets
"""
import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (DataCollatorForLanguageModeling, GPT2Config, GPT2LMHeadModel,
                          PreTrainedTokenizerFast, Trainer, TrainingArguments)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="runs/hf")
p.add_argument("--max-steps", type=int, default=12)
args = p.parse_args()

words = ("the model trains on tiny text data and the loss goes down while the ranks "
         "exchange gradients over gloo on cpu every step of the run").split()
vocab = {"[UNK]": 0, "<|endoftext|>": 1}
for w in words:
    vocab.setdefault(w, len(vocab))
if args.fault != "nopad":
    vocab["[PAD]"] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="<|endoftext|>",
                              bos_token="<|endoftext|>")
if args.fault != "nopad":
    tok.pad_token = "[PAD]"

g = torch.Generator().manual_seed(0)
texts = []
for i in range(64):
    n = int(torch.randint(5, 20, (1,), generator=g))
    idx = torch.randint(0, len(words), (n,), generator=g)
    texts.append(" ".join(words[j] for j in idx))


class TextDS(torch.utils.data.Dataset):
    def __init__(self, texts):
        self.enc = [tok(t, truncation=True, max_length=32) for t in texts]

    def __len__(self):
        return len(self.enc)

    def __getitem__(self, i):
        return self.enc[i]


cfg = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=64, n_layer=2, n_head=2,
                 bos_token_id=1, eos_token_id=1)
model = GPT2LMHeadModel(cfg)
if args.fault == "lora_targets":
    from peft import LoraConfig, get_peft_model
    lcfg = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.05,
                      task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)
    model.print_trainable_parameters()

extra = {}
if args.fault == "bestmodel":
    extra = dict(load_best_model_at_end=True, eval_strategy="steps", eval_steps=5, save_strategy="epoch",
                 metric_for_best_model="eval_loss")
targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=4, max_steps=args.max_steps,
                          learning_rate=5e-4, logging_steps=2, save_strategy=extra.pop("save_strategy", "no"),
                          report_to=[], use_cpu=True, ddp_backend="gloo", dataloader_num_workers=0,
                          disable_tqdm=False, **extra)
collator = DataCollatorForLanguageModeling(tok, mlm=False)
trainer = Trainer(model=model, args=targs, train_dataset=TextDS(texts), eval_dataset=TextDS(texts[:8]),
                  data_collator=collator)
trainer.train()
if trainer.is_world_process_zero():
    print("final train state:", trainer.state.log_history[-1])
