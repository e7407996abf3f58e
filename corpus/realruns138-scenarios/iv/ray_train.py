"""Ray Train TorchTrainer (gloo, CPU) with a few workers.
Flags: --fault {none,ckptkeys,kill,infeasible,tuneerr} --bad-rank R --workers N
"""
import argparse, os, time, tempfile, datetime
import torch, torch.nn as nn
import ray
from ray import train
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

def build(hidden):
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 1))

def loop(cfg):
    import torch.distributed as dist
    ctx = train.get_context(); rank = ctx.get_world_rank()
    hidden = cfg["hidden"]
    model = build(hidden)
    if cfg["fault"] == "ckptkeys" and rank == cfg["bad_rank"]:
        # this rank warm-starts from the pretrain checkpoint listed in its shard config
        sd = torch.load(cfg["init_ckpt"], map_location="cpu")
        model.load_state_dict(sd)
    if cfg["fault"] == "kill":
        open(os.path.join(cfg["workdir"], f"ray.pid.rank{rank}"), "w").write(str(os.getpid()))
    model = train.torch.prepare_model(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(rank)
    for epoch in range(cfg["epochs"]):
        for it in range(10):
            x = torch.randn(32, 16, generator=g); y = x.sum(1, keepdim=True)
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            time.sleep(cfg["sleep"])
        train.report({"epoch": epoch, "loss": loss.item()})
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", default="none"); ap.add_argument("--bad-rank", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2); ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--sleep", type=float, default=0.05)
    a = ap.parse_args()
    wd = os.path.abspath(".")
    if a.fault == "ckptkeys":
        # pretrain checkpoint saved from an older model with hidden=32
        torch.save(build(32).state_dict(), os.path.join(wd, "pretrain_h32.pt"))
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir="/tmp/rr138iv_ray", log_to_driver=True)
    cfg = {"hidden": 64, "fault": a.fault, "bad_rank": a.bad_rank, "epochs": a.epochs, "sleep": a.sleep,
           "init_ckpt": os.path.join(wd, "pretrain_h32.pt"), "workdir": wd}
    trainer = TorchTrainer(loop, train_loop_config=cfg,
                           scaling_config=ScalingConfig(num_workers=a.workers, use_gpu=False, resources_per_worker={"CPU": 1}),
                           torch_config=TorchConfig(backend="gloo", timeout_s=30),
                           run_config=RunConfig(name=f"rr-{a.fault}", storage_path=os.path.join(wd, "ray_results"),
                                                failure_config=FailureConfig(max_failures=0)))
    result = trainer.fit()
    print("final metrics:", result.metrics)

if __name__ == "__main__":
    main()
