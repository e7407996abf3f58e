"""HF Trainer on a tiny GPT-2 (local char tokenizer, synthetic corpus) with checkpointing and resume."""
import argparse, os, warnings
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class CharLM(Dataset):
    def __init__(self, n=256, block=32):
        text = "to be or not to be that is the question whether tis nobler in the mind " * 60
        self.vocab = sorted(set(text))
        ids = [self.vocab.index(c) for c in text]
        self.items = [ids[i:i + block] for i in range(0, n * 7, 7)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        x = torch.tensor(self.items[i])
        return {"input_ids": x, "labels": x.clone()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="hf_out")
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--resume", default=None, help="'latest' or a checkpoint directory")
    p.add_argument("--max-steps", type=int, default=40)
    p.add_argument("--save-steps", type=int, default=20)
    p.add_argument("--ddp-backend", default="env", help="'env': gloo when launched by torchrun/accelerate")
    args = p.parse_args()

    ds = CharLM()
    cfg = GPT2Config(vocab_size=len(ds.vocab), n_positions=64, n_embd=args.n_embd, n_layer=args.n_layer, n_head=2)
    model = GPT2LMHeadModel(cfg)
    targs = TrainingArguments(
        output_dir=args.out, max_steps=args.max_steps, per_device_train_batch_size=8,
        learning_rate=1e-3, logging_steps=5, save_steps=args.save_steps, save_strategy="steps",
        report_to=[], use_cpu=True, ddp_backend=(("gloo" if "WORLD_SIZE" in os.environ else None) if args.ddp_backend == "env" else args.ddp_backend), dataloader_num_workers=0,
        disable_tqdm=False, seed=0,
    )
    print(f"[process {targs.process_index}] world_size={targs.world_size} parallel_mode={targs.parallel_mode}", flush=True)
    trainer = Trainer(model=model, args=targs, train_dataset=ds)
    resume = True if args.resume == "latest" else args.resume
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(os.path.join(args.out, "final"))
    if trainer.is_world_process_zero():
        print("final model written to", os.path.join(args.out, "final"))


if __name__ == "__main__":
    main()
