"""accelerate + HF datasets: tokenise a local jsonl corpus with a tiny char-level vocab, train a tiny GPT-2."""
import argparse, json, os, random
import torch
from accelerate import Accelerator
from datasets import load_dataset
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()

def write_corpus(d, fault):
    os.makedirs(d, exist_ok=True)
    rnd = random.Random(0)
    with open(os.path.join(d, "train.jsonl"), "w") as f:
        for i in range(600):
            text = " ".join(rnd.choice(["the", "cat", "sat", "on", "mat", "a", "dog", "ran"]) for _ in range(rnd.randint(8, 20)))
            line = json.dumps({"id": i, "text": text})
            if fault == "badjson" and i == 437:
                line = line[: len(line) // 2]      # writer was killed mid-line while exporting
            f.write(line + "\n")

def main():
    acc = Accelerator(cpu=True)
    if acc.is_main_process and not os.path.exists(os.path.join(args.data, "train.jsonl")):
        write_corpus(args.data, args.fault)
    acc.wait_for_everyone()
    ds = load_dataset("json", data_files=os.path.join(args.data, "train.jsonl"), split="train",
                      cache_dir=os.path.join(args.data, "hf-cache"))
    vocab = {c: i + 1 for i, c in enumerate(sorted(set("abcdefghijklmnopqrstuvwxyz ")))}
    ds = ds.map(lambda b: {"input_ids": [[vocab[c] for c in t[:64].ljust(64)] for t in b["text"]]}, batched=True)
    ds.set_format("torch", columns=["input_ids"])
    dl = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=64, n_layer=2, n_head=2, n_embd=64))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, opt, dl = acc.prepare(model, opt, dl)
    for step, b in enumerate(dl):
        out = model(input_ids=b["input_ids"], labels=b["input_ids"])
        acc.backward(out.loss); opt.step(); opt.zero_grad()
        if step % 5 == 0: acc.print(f"step {step} loss {out.loss.item():.4f}")
        if step >= args.steps: break
    acc.print("done")

if __name__ == "__main__":
    main()
