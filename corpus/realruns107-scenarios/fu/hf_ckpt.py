"""Checkpoint save / resume with the HF Trainer on a tiny GPT-2; --fault selects what goes wrong."""
import argparse, os, sys, logging
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinyhf
import torch
from torch import nn
from datasets import Dataset
from transformers import Trainer, TrainingArguments, DataCollatorForLanguageModeling
from transformers.modeling_outputs import CausalLMOutput

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="out/ckpt")
p.add_argument("--resume", default=None, help="checkpoint dir to resume from")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--save-steps", type=int, default=10)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--freeze-embeddings", action="store_true")
p.add_argument("--logging-ts", action="store_true")
a = p.parse_args()
if a.logging_ts:
    logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("ckpt_train")
world = int(os.environ.get("WORLD_SIZE", 1))
rank = int(os.environ.get("RANK", 0))

tok = tinyhf.make_tokenizer()

class TinyLM(nn.Module):
    """Hand-written LM used by the research branch: the output projection is tied to the embedding."""
    def __init__(self, vocab, d=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.mix = nn.GRU(d, d, batch_first=True)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.embed.weight
    def forward(self, input_ids, attention_mask=None, labels=None):
        h, _ = self.mix(self.embed(input_ids))
        logits = self.lm_head(h)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)),
                                               labels[:, 1:].reshape(-1), ignore_index=-100)
        return CausalLMOutput(loss=loss, logits=logits)

if a.fault == "tied-custom":
    model = TinyLM(len(tok))
else:
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=a.n_embd, n_head=2, n_positions=64,
                     bos_token_id=2, eos_token_id=3, pad_token_id=1)
    model = GPT2LMHeadModel(cfg)
if a.fault == "gen-config":
    # sampling defaults copied from the inference notebook
    model.generation_config.do_sample = False
    model.generation_config.temperature = 0.7
    model.generation_config.top_p = 0.9
if a.freeze_embeddings:
    for n_, p_ in model.named_parameters():
        if "wte" in n_ or "wpe" in n_:
            p_.requires_grad_(False)
    log.info("froze embeddings: %d trainable params", sum(p_.numel() for p_ in model.parameters() if p_.requires_grad))

texts = tinyhf.corpus(256, seed=3)
ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=48),
                                            batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=4, learning_rate=5e-4,
                         weight_decay=0.01, logging_steps=2, save_strategy="steps", save_steps=a.save_steps,
                         report_to="none", use_cpu=True, ddp_backend="gloo" if world > 1 else None,
                         ddp_timeout=30, seed=0)

if a.fault == "load-train-args":
    # recover the hyper-parameters of the run we are continuing
    old = torch.load(os.path.join(a.resume, "training_args.bin"))
    log.info("continuing run with lr=%s", old.learning_rate)

trainer = Trainer(model=model, args=args, train_dataset=ds, processing_class=tok,
                  data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
log.info("rank %d/%d starting, resume_from_checkpoint=%s", rank, world, a.resume)
trainer.train(resume_from_checkpoint=a.resume)
trainer.save_model(os.path.join(a.out, "final"))
log.info("rank %d finished", rank)
