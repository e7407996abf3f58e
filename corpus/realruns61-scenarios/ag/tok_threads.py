"""Offline evaluation: a thread pool pre-tokenizes eval requests with one shared fast tokenizer,
each request using its own max_length (bucketed truncation), then scores them with a tiny GPT2."""
import argparse, os, sys, random, time, logging
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from tok_common import build_tokenizer, WORDS

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=4)
p.add_argument("--requests", type=int, default=4000)
p.add_argument("--bucketed", action="store_true", help="per-request max_length (the bug)")
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(levelname)s: %(message)s")
from transformers import GPT2Config, GPT2LMHeadModel
tok = build_tokenizer()
rng = random.Random(0)
reqs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60))) for _ in range(args.requests)]
def encode(i):
    ml = 8 * (1 + i % 6) if args.bucketed else 48
    return tok(reqs[i], truncation=True, max_length=ml, padding="max_length")["input_ids"]
model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=2, n_embd=64, n_head=4, n_positions=64)).eval()
t0 = time.time()
with ThreadPoolExecutor(args.threads) as ex:
    encoded = list(ex.map(encode, range(len(reqs))))
logging.info("tokenized %d eval requests in %.2fs", len(encoded), time.time() - t0)
nll, n = 0.0, 0
with torch.no_grad():
    for i in range(0, 256, 32):
        ids = [torch.tensor(e) for e in encoded[i:i + 32] if len(e) == 48] or [torch.tensor(encoded[i][:8])]
        x = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=1)
        out = model(input_ids=x, labels=x)
        nll += out.loss.item(); n += 1
logging.info("eval loss %.4f", nll / n)
