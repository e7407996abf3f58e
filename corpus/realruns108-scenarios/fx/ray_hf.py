"""Hugging Face Trainer inside Ray Train (TorchTrainer, 2 CPU workers, gloo). Tiny GPT-2 built from config."""
import argparse, os
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import ray
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--name", default="fx_hf")
args = p.parse_args()

WORDS = ("the a model trains on small cpu nodes with gloo and ray workers report loss every few steps "
         "checkpoint saved resumed evaluation batch token sequence long short").split()


def build_tokenizer(with_pad):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {"[UNK]": 0, "[BOS]": 1, "[EOS]": 2}
    if with_pad:
        vocab["[PAD]"] = len(vocab)
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    kw = dict(tokenizer_object=tk, unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")
    if with_pad:
        kw["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(**kw)


def train_func(config):
    import random, torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments, DataCollatorForLanguageModeling
    from datasets import Dataset
    import ray.train.huggingface.transformers as rhf
    from ray import train

    fault = config["fault"]
    rank = train.get_context().get_world_rank()
    tok = build_tokenizer(with_pad=(fault != "padding"))
    rnd = random.Random(rank)
    texts = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 20))) for _ in range(400)]
    ds = Dataset.from_dict({"text": texts})

    def enc(batch):
        return tok(batch["text"], padding="max_length", truncation=True, max_length=24)

    ds = ds.map(enc, batched=True, remove_columns=["text"])
    split = ds.train_test_split(test_size=0.1, seed=0)
    cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=2, n_positions=64,
                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    model = GPT2LMHeadModel(cfg)
    targs = dict(output_dir=f"/work/rr108/fx/work/hf_out/{config['name']}", per_device_train_batch_size=8,
                 max_steps=config["steps"], logging_steps=5, learning_rate=5e-4, report_to="none",
                 save_strategy="steps", save_steps=15, eval_strategy="steps", eval_steps=15,
                 use_cpu=True, dataloader_num_workers=0)
    if fault == "args":
        # config migrated from an older project: evaluation disabled but best-model reload kept
        targs.update(eval_strategy="no", load_best_model_at_end=True, metric_for_best_model="eval_loss")
    training_args = TrainingArguments(**targs)
    trainer = Trainer(model=model, args=training_args, train_dataset=split["train"], eval_dataset=split["test"],
                      data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    trainer.add_callback(rhf.RayTrainReportCallback())
    trainer = rhf.prepare_trainer(trainer)
    trainer.train()


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False)
    trainer = TorchTrainer(train_func, train_loop_config={"fault": args.fault, "steps": args.steps, "name": args.name},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
                           torch_config=TorchConfig(backend="gloo", timeout_s=60),
                           run_config=RunConfig(name=args.name, storage_path="/work/rr108/fx/work/ray_results",
                                                failure_config=FailureConfig(max_failures=0)))
    result = trainer.fit()
    print("final metrics:", result.metrics)
    ray.shutdown()
