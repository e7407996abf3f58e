"""Hydra + OmegaConf trainer (single process or torchrun). Config in scenarios/conf/train.yaml."""
import logging, os, warnings
from datetime import timedelta
import hydra
from omegaconf import DictConfig, OmegaConf
import torch, torch.nn as nn
log = logging.getLogger(__name__)

@hydra.main(version_base=None, config_path="conf", config_name="train")
def main(cfg: DictConfig):
    dist = "RANK" in os.environ
    if dist:
        import torch.distributed as td
        td.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = int(os.environ.get("RANK", 0))
    log.info("config:\n" + OmegaConf.to_yaml(cfg))
    torch.manual_seed(rank)
    layers = [nn.Linear(10, cfg.model.hidden), nn.ReLU()]
    for _ in range(cfg.model.layers - 1):
        layers += [nn.Linear(cfg.model.hidden, cfg.model.hidden), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(cfg.model.hidden, 1))
    if cfg.trainer.resume:
        if os.path.exists(cfg.trainer.resume):
            model.load_state_dict(torch.load(cfg.trainer.resume)["model"])
        else:
            log.warning(f"resume checkpoint {cfg.trainer.resume} not found -- starting from scratch")
    if dist:
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    x = torch.randn(cfg.data.n, 10); y = torch.sin(x.sum(1, keepdim=True))
    for step in range(1, cfg.trainer.steps + 1):
        idx = torch.randint(0, cfg.data.n, (cfg.data.batch_size,))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % cfg.trainer.log_every == 0:
            log.info(f"rank={rank} step={step} loss={loss.item():.4f} grad_norm={gn:.3f}")
    if dist:
        td.destroy_process_group()
    log.info("training finished")

if __name__ == "__main__":
    main()
