"""Single-process tiny LM fine-tune (plain python), tqdm progress, logging with timestamps.
--mode healthy : waits for a shard that a background preprocessor is still writing (retries, logs traceback)
--mode resume  : loads a 'pretrained' checkpoint before training"""
import argparse, logging, os, sys, threading, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--mode", default="healthy")
p.add_argument("--workdir", default="/work/rr78/cb/work/single")
p.add_argument("--vocab", type=int, default=128)
p.add_argument("--ckpt", default=None)
p.add_argument("--steps", type=int, default=40)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s | %(message)s")
log = logging.getLogger("finetune")


class LM(nn.Module):
    def __init__(self, vocab, dim=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.block = nn.TransformerEncoderLayer(dim, 4, 128, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, x):
        return self.lm_head(self.block(self.tok(x)))


def preprocess(path, delay):
    time.sleep(delay)
    tmp = path + ".tmp.npy"
    np.save(tmp, np.random.default_rng(0).integers(0, 128, size=(400, 33)).astype(np.int64))
    os.replace(tmp, path)


def load_shard(path, tries=5):
    for i in range(1, tries + 1):
        try:
            return np.load(path)
        except FileNotFoundError:
            log.warning("shard not ready (attempt %d/%d), retrying in 1s", i, tries, exc_info=True)
            time.sleep(1.0)
    raise RuntimeError(f"shard {path} never appeared")


def main():
    os.makedirs(args.workdir, exist_ok=True)
    shard = os.path.join(args.workdir, "train_000.npy")
    if os.path.exists(shard):
        os.remove(shard)
    threading.Thread(target=preprocess, args=(shard, 2.5 if args.mode == "healthy" else 0.0), daemon=True).start()
    if args.mode != "healthy":
        time.sleep(0.5)
    model = LM(args.vocab)
    log.info("model params: %d", sum(p.numel() for p in model.parameters()))
    if args.ckpt:
        sd = torch.load(args.ckpt, map_location="cpu", weights_only=True)
        model.load_state_dict(sd)
        log.info("loaded %s", args.ckpt)
    data = torch.from_numpy(load_shard(shard))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    bar = tqdm(range(args.steps), desc="finetune", mininterval=0.5)
    for step in bar:
        b = data[(step * 8) % 392:(step * 8) % 392 + 8]
        logits = model(b[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), b[:, 1:].reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % 10 == 9:
            log.info("step %d loss %.4f", step + 1, loss.item())
    log.info("finished %d steps", args.steps)


if __name__ == "__main__":
    main()
