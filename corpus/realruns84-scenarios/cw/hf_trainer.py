"""Tiny GPT-2 fine-tune with HF Trainer; --fault selects a misconfiguration on --rank."""
import argparse, os, warnings, logging
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                          TrainingArguments, GenerationConfig, TrainerCallback, DataCollatorForLanguageModeling)
from datasets import Dataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=3)
p.add_argument("--out", default="/work/rr84/cw/out/hf")
p.add_argument("--steps", type=int, default=8)
a = p.parse_args()
rank = int(os.environ.get("RANK", 0))
me = (rank == a.rank)
logging.basicConfig(format="%(asctime)s %(levelname)s [rank" + str(rank) + "] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")

words = "the a cat dog sat on mat ran far fast slow big small red blue green".split()
vocab = {"[UNK]": 0, "[EOS]": 1}
for w in words: vocab[w] = len(vocab)
tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tk.pre_tokenizer = pre_tokenizers.Whitespace()
tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", eos_token="[EOS]")
if not (a.fault == "no_pad" and me):
    tok.pad_token = tok.eos_token

import random
random.seed(0)
texts = [" ".join(random.choice(words) for _ in range(random.randint(4, 12))) for _ in range(64)]
ds = Dataset.from_dict({"text": texts})
ds = ds.map(lambda b: tok(b["text"]), batched=True, remove_columns=["text"])

vsize = len(vocab)
if a.fault == "embed_oob" and me:
    vsize = 8   # config built from a stale vocab size: tokenizer ids go up to 18
cfg = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=vsize, n_positions=32,
                 bos_token_id=1, eos_token_id=1)
model = GPT2LMHeadModel(cfg)
log.info("model params: %d", sum(p.numel() for p in model.parameters()))

if a.fault == "chat" and me:
    msgs = [{"role": "user", "content": "the cat sat"}]
    prompt = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)

kw = dict(output_dir=a.out + f"/r{rank}", per_device_train_batch_size=4, max_steps=a.steps,
          logging_steps=2, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=False,
          dataloader_num_workers=0, learning_rate=5e-4)
if a.fault == "strategy" and me:
    kw.update(load_best_model_at_end=True, eval_strategy="steps", eval_steps=4, save_strategy="epoch")
if a.fault == "removed_arg" and me:
    kw.update(evaluation_strategy="steps", eval_steps=4)
args = TrainingArguments(**kw)


class GenCb(TrainerCallback):
    def on_step_end(self, args_, state, control, model=None, **k):
        if a.fault == "gen_config" and me and state.global_step == a.step:
            ids = torch.tensor([tok("the cat sat")["input_ids"]])
            out = model.generate(ids, max_new_tokens=8, do_sample=False, num_return_sequences=4)
            log.info("sample: %s", tok.decode(out[0]))

coll = DataCollatorForLanguageModeling(tok, mlm=False)
tr = Trainer(model=model, args=args, train_dataset=ds, data_collator=coll, callbacks=[GenCb()])
tr.train()
log.info("training finished")
