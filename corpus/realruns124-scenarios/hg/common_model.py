import dataclasses
import torch.nn as nn


@dataclasses.dataclass
class TrainConfig:
    d_in: int = 32
    d_hidden: int = 64
    n_cls: int = 5
    lr: float = 3e-3
    run_name: str = "clf-baseline"


class Classifier(nn.Module):
    def __init__(self, d_in=32, d_hidden=64, n_cls=5):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.Dropout(0.1),
                                     nn.Linear(d_hidden, d_hidden), nn.GELU())
        self.head = nn.Linear(d_hidden, n_cls)

    def forward(self, x):
        return self.head(self.encoder(x))
