"""Tiny HF / Lightning trainings that finish normally but print lots of warnings.

--mode trainer    transformers Trainer on a 2-layer GPT2 built from config, word-level tokenizer built locally
--mode lightning  Lightning Trainer on CPU with a tiny module (num_workers=0 warnings, logging warnings, ...)
"""
import argparse, os, warnings
os.environ.setdefault("HF_HUB_OFFLINE", "1")
p = argparse.ArgumentParser()
p.add_argument("--mode", default="trainer")
p.add_argument("--out", default="/tmp/fz_hf_out")
args = p.parse_args()

import torch
torch.set_num_threads(1)


def run_trainer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast, Trainer,
                              TrainingArguments, DataCollatorForLanguageModeling)
    from datasets import Dataset
    words = "the cat sat on a mat while dog ran to big red ball and small blue box".split()
    vocab = {w: i for i, w in enumerate(["[UNK]", "[PAD]", "[EOS]"] + words)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    import random
    rnd = random.Random(0)
    texts = [" ".join(rnd.choice(words) for _ in range(rnd.randint(5, 20))) for _ in range(400)]
    ds = Dataset.from_dict({"text": texts}).map(lambda b: tok(b["text"], truncation=True, max_length=24),
                                                batched=True, remove_columns=["text"])
    cfg = GPT2Config(vocab_size=len(vocab), n_layer=2, n_head=2, n_embd=64, n_positions=32,
                     bos_token_id=2, eos_token_id=2)
    model = GPT2LMHeadModel(cfg)
    targs = TrainingArguments(output_dir=args.out, per_device_train_batch_size=16, num_train_epochs=2,
                              logging_steps=5, save_strategy="epoch", report_to=[], use_cpu=True,
                              eval_strategy="no", dataloader_num_workers=0, disable_tqdm=False,
                              warmup_ratio=0.1)
    tr = Trainer(model=model, args=targs, train_dataset=ds,
                 data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
    out = tr.train()
    print("train_loss", round(out.training_loss, 4))


def run_lightning():
    import lightning as L
    from torch.utils.data import DataLoader, TensorDataset
    import torch.nn as nn

    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

        def training_step(self, batch, i):
            x, y = batch
            loss = nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, i):
            x, y = batch
            self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-2)

    X = torch.randn(600, 8)
    Y = X.sum(1, keepdim=True)
    tr_dl = DataLoader(TensorDataset(X[:500], Y[:500]), batch_size=32, shuffle=True)
    va_dl = DataLoader(TensorDataset(X[500:], Y[500:]), batch_size=32)
    trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, log_every_n_steps=5,
                        default_root_dir=args.out, enable_checkpointing=True)
    trainer.fit(M(), tr_dl, va_dl)
    print("best ckpt:", trainer.checkpoint_callback.best_model_path)


if __name__ == "__main__":
    run_trainer() if args.mode == "trainer" else run_lightning()
