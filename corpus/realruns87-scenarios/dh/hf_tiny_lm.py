"""Tiny GPT-2 LM fine-tune on a locally built tokenizer / corpus (no downloads).

--fault: none | vocab (model vocab_size from an old config) | pad (batch padding without pad token)
         | resume (load checkpoint into a model built from another config) | trainerargs
         | chat (apply_chat_template on base tokenizer) | safetensors (save tied weights with
         safetensors.torch.save_file) | save (save to --out)
--mode: loop (manual loop) | trainer (HF Trainer) | accel (Accelerator loop)
"""
import argparse, os, sys, math, warnings
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--mode", default="loop")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--vocab-size", type=int, default=0)
p.add_argument("--n-layer", type=int, default=2)
p.add_argument("--resume", default=None)
p.add_argument("--out", default=None)
args = p.parse_args()

words = ("the a model data train loss step rank gradient batch token layer epoch learning rate "
         "optimizer weight bias attention head hidden output input sequence value key query "
         "norm dropout checkpoint save load resume shard worker node cluster job").split()
vocab = {"<unk>": 0, "<bos>": 1, "<eos>": 2}
for w in words:
    vocab.setdefault(w, len(vocab))
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<bos>", eos_token="<eos>")
if args.fault != "pad":
    tok.pad_token = tok.eos_token

g = torch.Generator().manual_seed(0)
corpus = [" ".join(words[i] for i in torch.randint(0, len(words), (int(n),), generator=g))
          for n in torch.randint(5, 14, (64,), generator=g)]

vs = args.vocab_size or len(tok)
cfg = GPT2Config(vocab_size=vs, n_layer=args.n_layer, n_embd=64, n_head=4, n_positions=64,
                 bos_token_id=1, eos_token_id=2)
model = GPT2LMHeadModel(cfg)
print(f"model: {sum(p.numel() for p in model.parameters())/1e3:.1f}K params, vocab={vs}, tokenizer={len(tok)}", flush=True)

if args.resume:
    print(f"loading weights from {args.resume}", flush=True)
    sd = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(sd)

if args.fault == "chat":
    msgs = [{"role": "user", "content": "train the model"}, {"role": "assistant", "content": "step loss"}]
    corpus = [tok.apply_chat_template(msgs, tokenize=False)] + corpus

if args.mode == "trainer":
    from transformers import Trainer, TrainingArguments
    from datasets import Dataset
    ds = Dataset.from_dict({"text": corpus})
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=32), batched=True, remove_columns=["text"])
    split = ds.train_test_split(test_size=0.125, seed=0)
    from transformers import DataCollatorForLanguageModeling
    coll = DataCollatorForLanguageModeling(tok, mlm=False)
    kw = dict(output_dir=args.out or "out/trainer", per_device_train_batch_size=8, max_steps=args.steps,
              logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", eval_strategy="steps",
              eval_steps=5, learning_rate=5e-4, warmup_steps=2)
    if args.fault == "trainerargs":
        kw.update(save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="eval_loss")
    targs = TrainingArguments(**kw)
    tr = Trainer(model=model, args=targs, train_dataset=split["train"], eval_dataset=split["test"],
                 data_collator=coll)
    tr.train()
    print("done", flush=True)
    sys.exit(0)

acc = None
if args.mode == "accel":
    from accelerate import Accelerator
    acc = Accelerator(cpu=True)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
bs = 8
batches = [corpus[i:i + bs] for i in range(0, len(corpus), bs)]
if acc:
    model, opt = acc.prepare(model, opt)
    batches = batches[acc.process_index::acc.num_processes]
model.train()
for step in range(args.steps):
    texts = batches[step % len(batches)]
    enc = tok(texts, padding=True, truncation=True, max_length=32, return_tensors="pt")
    labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
    out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"], labels=labels)
    if acc:
        acc.backward(out.loss)
    else:
        out.loss.backward()
    opt.step(); opt.zero_grad()
    msg = f"step {step:3d} | loss {out.loss.item():.4f} | ppl {math.exp(out.loss.item()):.1f}"
    if acc:
        acc.print(msg)
    else:
        print(msg, flush=True)

if acc:
    acc.wait_for_everyone()
    model = acc.unwrap_model(model)
if args.fault == "safetensors":
    from safetensors.torch import save_file
    os.makedirs(args.out, exist_ok=True)
    print(f"exporting weights to {args.out}/model.safetensors", flush=True)
    save_file(model.state_dict(), os.path.join(args.out, "model.safetensors"))
elif args.out and (acc is None or acc.is_main_process):
    os.makedirs(args.out, exist_ok=True)
    print(f"saving state_dict to {args.out}/pytorch_model.bin", flush=True)
    torch.save(model.state_dict(), os.path.join(args.out, "pytorch_model.bin"))
print("finished", flush=True)
