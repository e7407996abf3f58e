"""Tiny GPT-2 language model on a local corpus with a locally trained BPE tokenizer.

--case pair_mismatch : model config copied from an older run (vocab 256) while the tokenizer was retrained (vocab 600)
--case trainer_ok    : HF Trainer run, everything consistent (noisy but healthy)
Launch with accelerate (custom loop) or plain python (Trainer).
"""
import argparse
import os
import random
import warnings

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--case", default="trainer_ok")
p.add_argument("--tok-vocab", type=int, default=600)
p.add_argument("--model-vocab", type=int, default=0)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="hf_out")
args = p.parse_args()

random.seed(0)
words = ["gradient", "tensor", "rank", "loss", "epoch", "batch", "optimizer", "checkpoint", "shard", "token",
         "layer", "attention", "vocabulary", "sampler", "scheduler", "warmup", "dropout", "embedding", "logit", "norm"]
corpus = [" ".join(random.choice(words) + ("s" if random.random() < 0.3 else "") + str(random.randint(0, 60))
                   for _ in range(random.randint(8, 24))) for _ in range(800)]

tok_path = os.path.join(args.out, f"tok{args.tok_vocab}.json")
os.makedirs(args.out, exist_ok=True)
if not os.path.exists(tok_path):
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=args.tok_vocab, special_tokens=["<unk>", "<pad>", "<eos>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(corpus, tr)
    bpe.save(tok_path)
tok = PreTrainedTokenizerFast(tokenizer_file=tok_path, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
print(f"tokenizer: {len(tok)} tokens ({tok_path})", flush=True)

model_vocab = args.model_vocab or len(tok)
cfg = GPT2Config(vocab_size=model_vocab, n_layer=2, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
model = GPT2LMHeadModel(cfg)

if args.case == "pair_mismatch":
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    acc = Accelerator()
    set_seed(0)
    acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")
    enc = tok(corpus, truncation=True, max_length=48, padding="max_length", return_tensors="pt")
    ds = torch.utils.data.TensorDataset(enc["input_ids"], enc["attention_mask"])
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model, opt, dl = acc.prepare(model, opt, dl)
    model.train()
    step = 0
    for ids, mask in dl:
        labels = ids.masked_fill(mask == 0, -100)
        out = model(input_ids=ids, attention_mask=mask, labels=labels)
        acc.backward(out.loss)
        opt.step()
        opt.zero_grad()
        step += 1
        if step % 2 == 0:
            print(f"[proc {acc.process_index}] step {step} loss {out.loss.item():.4f}", flush=True)
        if step >= args.steps:
            break
    acc.print("done")
    acc.end_training()
else:
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
    ds = Dataset.from_dict({"text": corpus}).map(lambda b: tok(b["text"], truncation=True, max_length=48),
                                                 batched=True, remove_columns=["text"])
    split = ds.train_test_split(test_size=0.1, seed=0)
    targs = TrainingArguments(output_dir=os.path.join(args.out, "trainer"), per_device_train_batch_size=16,
                              per_device_eval_batch_size=16, max_steps=args.steps, logging_steps=5,
                              eval_strategy="steps", eval_steps=10, save_steps=10, save_total_limit=1,
                              learning_rate=5e-4, report_to=[], use_cpu=True, fp16=True, gradient_checkpointing=True,
                              dataloader_num_workers=0, seed=0)
    trainer = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    trainer.train()
    print(trainer.evaluate())
