"""Train a tiny model and, every --export-every steps, rank 0 exports a deployable artifact
(torch.jit.script / torch.jit.trace / torch.export) while other ranks wait at a barrier."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--mode", default="trace", choices=["script", "trace", "export_dyn", "export_item"])
p.add_argument("--steps", type=int, default=9)
p.add_argument("--export-every", type=int, default=4)
p.add_argument("--out", default="/work/rr59/u/_artifacts")
args = p.parse_args()

class Pooler(nn.Module):
    def __init__(self, d=32, vocab=64, n_cls=5, chunk=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.Linear(d, d)
        self.cls = nn.Linear(d, n_cls)
        self.chunk = chunk
    def forward(self, ids, lengths=None, **unused):
        h = torch.tanh(self.enc(self.emb(ids)))
        B, L, D = h.shape
        # mean over fixed-size chunks, then max over chunks
        h = h.reshape(B, L // self.chunk, self.chunk, D).mean(2).amax(1)
        if lengths is not None and lengths.max().item() > 0:
            h = h * (lengths.float().clamp(min=1).log().unsqueeze(-1) + 1)
        return self.cls(h)

def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(message)s")
    log = logging.getLogger("trainer")
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    torch.manual_seed(0)
    model = Pooler()
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    os.makedirs(args.out, exist_ok=True)
    for step in range(1, args.steps + 1):
        ids = torch.randint(0, 64, (8, 16), generator=g)
        lengths = torch.randint(1, 17, (8,), generator=g)
        y = torch.randint(0, 5, (8,), generator=g)
        loss = F.cross_entropy(ddp(ids, lengths), y)
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("rank %d step %d loss %.4f", rank, step, loss.item())
        if step % args.export_every == 0:
            if rank == 0:
                model.eval()
                ex_ids, ex_len = ids[:2], lengths[:2]
                path = os.path.join(args.out, f"model_step{step}_{args.mode}.pt2")
                log.info("exporting %s artifact to %s", args.mode, path)
                if args.mode == "script":
                    art = torch.jit.script(model); art.save(path)
                elif args.mode == "trace":
                    art = torch.jit.trace(model, (ex_ids, ex_len)); art.save(path)
                elif args.mode == "export_dyn":
                    seq = torch.export.Dim("seq", min=2, max=512)
                    ep = torch.export.export(model, (ex_ids,), dynamic_shapes=({1: seq},))
                    torch.export.save(ep, path)
                else:
                    ep = torch.export.export(model, (ex_ids, ex_len))
                    torch.export.save(ep, path)
                log.info("export ok (%d bytes)", os.path.getsize(path))
                model.train()
            if world > 1:
                dist.barrier()
    if world > 1:
        dist.destroy_process_group()
    log.info("rank %d training complete", rank)

if __name__ == "__main__":
    main()
