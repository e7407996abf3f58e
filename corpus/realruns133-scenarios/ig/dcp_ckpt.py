"""DDP training with torch.distributed.checkpoint (DCP) sharded save / resume."""
import argparse, os, time, logging, datetime
import torch, torch.nn as nn, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--ckdir", default="dcp")
p.add_argument("--resume-step", type=int, default=0)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--nlayers", type=int, default=2)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
log = logging.getLogger("dcp_train")


def build(h, n):
    layers = [nn.Linear(16, h), nn.ReLU()]
    for _ in range(n - 1):
        layers += [nn.Linear(h, h), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(h, 1))


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(build(args.hidden, args.nlayers))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    start = 0
    if args.resume_step:
        path = os.path.join(args.ckdir, f"step-{args.resume_step}")
        log.info("rank %d/%d loading DCP checkpoint %s", rank, world, path)
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = args.resume_step
        log.info("rank %d resumed at step %d", rank, start)
    g = torch.Generator().manual_seed(rank)
    for step in range(start, args.steps):
        x = torch.randn(32, 16, generator=g); y = x.sum(1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0:
            log.info("step=%d loss=%.4f", step + 1, loss.item())
        time.sleep(0.2)
        if (step + 1) % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            path = os.path.join(args.ckdir, f"step-{step+1}")
            dcp.save({"model": msd, "optim": osd}, checkpoint_id=path)
            log.info("rank %d saved DCP checkpoint %s", rank, path)
    log.info("rank %d done", rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
