"""Writes a small training notebook with a selectable bug; execute it with
jupyter nbconvert --to notebook --execute.  usage: nb_make.py FAULT OUT.ipynb
FAULT: shape | dtype | tokpad | dsmap | healthy | slow"""
import sys, nbformat
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell
fault, out = sys.argv[1], sys.argv[2]
cells = [new_markdown_cell("# Tiny experiment"),
 new_code_cell("import os, warnings\nos.environ['HF_HUB_OFFLINE']='1'\nimport numpy as np, torch, torch.nn as nn\ntorch.manual_seed(0); np.random.seed(0)\nprint(torch.__version__)")]
if fault in ("shape", "dtype", "slow"):
    cells += [new_code_cell(
"# features from the csv export (20 columns after one-hot encoding)\n"
"X = np.random.randn(256, 20)\n"
"y = (X[:, 0] + X[:, 3] > 0).astype(np.int64)\n"
+ ("X = X.astype(np.float32)\n" if fault != "dtype" else "")
+ "n_features = 16  # value from the old feature list\n" if fault == "shape" else
"X = np.random.randn(256, 20)\ny = (X[:, 0] + X[:, 3] > 0).astype(np.int64)\n" + ("X = X.astype(np.float32)\n" if fault != "dtype" else "") + "n_features = X.shape[1]\n"),
      new_code_cell("model = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU(), nn.Linear(32, 2))\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel"),
      new_code_cell(
"import time\nXt, yt = torch.from_numpy(X), torch.from_numpy(y)\n"
"for epoch in range(%d):\n    for i in range(0, len(Xt), 32):\n        xb, yb = Xt[i:i+32], yt[i:i+32]\n"
"        loss = nn.functional.cross_entropy(model(xb), yb)\n        opt.zero_grad(); loss.backward(); opt.step()\n"
"    print(f'epoch {epoch} loss {loss.item():.4f}')\n%s" % ((400, "    time.sleep(0.5)\n") if fault == "slow" else (3, "")))]
elif fault in ("tokpad", "healthy"):
    cells += [new_code_cell(
"from tokenizers import Tokenizer, models, pre_tokenizers\nfrom transformers import PreTrainedTokenizerFast, GPT2Config, GPT2LMHeadModel\n"
"texts = ['the cat sat on the mat', 'a dog ran', 'the quick brown fox jumps over the lazy dog', 'hello world'] * 8\n"
"vocab = {w: i for i, w in enumerate(['<unk>', '<eos>'] + sorted({w for t in texts for w in t.split()}))}\n"
"tk = Tokenizer(models.WordLevel(vocab, unk_token='<unk>')); tk.pre_tokenizer = pre_tokenizers.Whitespace()\n"
"tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token='<unk>', eos_token='<eos>'%s)\nprint(len(tok))" % (", pad_token='<eos>'" if fault == "healthy" else "")),
      new_code_cell("cfg = GPT2Config(vocab_size=len(tok), n_layer=2, n_head=2, n_embd=64, n_positions=64)\nmodel = GPT2LMHeadModel(cfg)\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\nprint(sum(p.numel() for p in model.parameters()))"),
      new_code_cell(
"for step in range(6):\n    batch = tok(texts[step*4:(step+1)*4], padding=True, return_tensors='pt')\n"
+ ("    with warnings.catch_warnings():\n        pass\n" if fault == "healthy" else "")
+ "    out = model(input_ids=batch['input_ids'], labels=batch['input_ids']%s)\n" % (", attention_mask=batch['attention_mask']" if fault != "healthy" else "")
+ "    out.loss.backward(); opt.step(); opt.zero_grad()\n    print('step', step, 'loss', round(out.loss.item(), 4))")]
    if fault == "healthy":
        cells += [new_code_cell("model.eval()\nids = tok('the cat', return_tensors='pt')['input_ids']\ngen = model.generate(ids, max_new_tokens=5, do_sample=False)\nprint(tok.decode(gen[0]))")]
elif fault == "dsmap":
    cells += [new_code_cell(
"from datasets import Dataset\nraw = Dataset.from_dict({'sentence': ['good movie', 'bad film', 'great plot', 'awful acting'] * 50, 'label': [1, 0, 1, 0] * 50})\nraw"),
      new_code_cell(
"vocab = {w: i+1 for i, w in enumerate(sorted({w for s in raw['sentence'] for w in s.split()}))}\n"
"def encode(batch):\n    return {'input_ids': [[vocab[w] for w in s.split()] for s in batch['text']]}\n"
"ds = raw.map(encode, batched=True, batch_size=32)\nds")]
nb = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbformat.write(nb, out)
