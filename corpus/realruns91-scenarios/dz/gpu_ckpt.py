"""Evaluate a checkpoint that was produced on a GPU node.

--make PATH : (preparation only) write a checkpoint whose storages carry the location tag 'cuda:0',
              exactly as torch.save writes it on a GPU machine (emulated with a location tagger,
              since this box has no GPU).
--eval PATH : the evaluation job: plain torch.load(PATH) on this CPU-only node, then a quick eval.
"""
import argparse, os, sys, logging
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--make")
p.add_argument("--eval")
args = p.parse_args()


def net():
    return nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 10))


if args.make:
    def gpu_tag(obj):
        return "cuda:0"
    torch.serialization.register_package(1, gpu_tag, lambda obj, loc: None)
    m = net()
    torch.save({"model": m.state_dict(), "epoch": 12, "best_acc": 0.913}, args.make)
    print("wrote", args.make)
    sys.exit(0)

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("eval")
log.info("torch %s, cuda available: %s", torch.__version__, torch.cuda.is_available())
log.info("loading %s", args.eval)
ckpt = torch.load(args.eval)
m = net(); m.load_state_dict(ckpt["model"]); m.eval()
x = torch.randn(256, 32); y = x[:, :10].argmax(1)
with torch.no_grad():
    acc = (m(x).argmax(1) == y).float().mean().item()
log.info("epoch %d eval acc %.3f", ckpt["epoch"], acc)
