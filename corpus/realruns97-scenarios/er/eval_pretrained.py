"""Load a fine-tuned model directory with from_pretrained, export / evaluate it on a local dataset.
--fault:
  none             healthy
  lfs_safetensors  model dir whose model.safetensors is a git-lfs pointer (cloned without git lfs pull)
  raw_save_file    export with safetensors.torch.save_file(model.state_dict()) (tied lm_head / wte)
  overflow         long-document chunking with return_overflowing_tokens in a batched map that keeps 'id'
"""
import argparse, os, sys, shutil, math

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--model-dir", default="/work/rr97/er/runs/clm_healthy/final")
p.add_argument("--work", default="/work/rr97/er/runs/eval_pt")
args = p.parse_args()

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling
sys.path.insert(0, os.path.dirname(__file__))
import common

os.makedirs(args.work, exist_ok=True)
mdir = args.model_dir
if args.fault == "lfs_safetensors":
    mdir = os.path.join(args.work, "cloned_model")
    shutil.rmtree(mdir, ignore_errors=True)
    shutil.copytree(args.model_dir, mdir)
    with open(os.path.join(mdir, "model.safetensors"), "w") as f:
        f.write("version https://git-lfs.github.com/spec/v1\n"
                "oid sha256:9f2c1b7e5d3a4c6b8e0f1a2d3c4b5a697887a6b5c4d3e2f1a0b9c8d7e6f5a4b3\n"
                "size 433480\n")
print(f"loading model from {mdir}", flush=True)
tok = AutoTokenizer.from_pretrained(mdir)
model = AutoModelForCausalLM.from_pretrained(mdir)
model.eval()
print(f"model loaded: {model.num_parameters():,} parameters", flush=True)

if args.fault == "raw_save_file":
    from safetensors.torch import save_file
    out = os.path.join(args.work, "export")
    os.makedirs(out, exist_ok=True)
    save_file(model.state_dict(), os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    print("exported to", out)
    sys.exit(0)

docs = [" ".join(common.make_texts(6, seed=s)) for s in range(40)]
ds = Dataset.from_dict({"id": list(range(len(docs))), "text": docs})


def chunk(batch):
    if args.fault == "overflow":
        return tok(batch["text"], truncation=True, max_length=32, stride=4,
                   return_overflowing_tokens=True)
    return tok(batch["text"], truncation=True, max_length=32)


ds = ds.map(chunk, batched=True, remove_columns=["text"], desc="Chunking documents")
ds = ds.remove_columns([c for c in ds.column_names if c not in ("input_ids", "attention_mask")])
coll = DataCollatorForLanguageModeling(tok, mlm=False)
dl = torch.utils.data.DataLoader(ds, batch_size=8, collate_fn=coll)
tot, n = 0.0, 0
with torch.no_grad():
    for b in dl:
        tot += model(**b).loss.item(); n += 1
print(f"eval chunks={len(ds)} loss={tot / n:.4f} ppl={math.exp(tot / n):.2f}")
