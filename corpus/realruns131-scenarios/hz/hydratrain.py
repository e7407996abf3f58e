"""Hydra entry point for the config-driven toy trainer (config in configs/hydra/config.yaml)."""
import os
import sys

import hydra
from omegaconf import DictConfig, OmegaConf

sys.path.insert(0, os.path.dirname(__file__))
from cfgtrain import train  # noqa: E402


@hydra.main(version_base=None, config_path="../configs/hydra", config_name="config")
def main(cfg: DictConfig):
    print(OmegaConf.to_yaml(cfg), flush=True)
    train(OmegaConf.to_container(cfg, resolve=True))


if __name__ == "__main__":
    main()
