"""LightningCLI entry point for the tiny sequence classifier (config via --config / dotted flags)."""
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
import lightning as L
from lightning.pytorch.cli import LightningCLI

class SeqModel(L.LightningModule):
    def __init__(self, vocab: int = 50, hidden: int = 32, lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(vocab, hidden); self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 4)
    def forward(self, x):
        h, _ = self.rnn(self.emb(x)); return self.head(h[:, -1])
    def training_step(self, b, i):
        loss = F.cross_entropy(self(b[0]), b[1]); self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        self.log("val_loss", F.cross_entropy(self(b[0]), b[1]), prog_bar=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

class SeqData(L.LightningDataModule):
    def __init__(self, batch_size: int = 16, n_train: int = 256, seq_len: int = 16):
        super().__init__(); self.save_hyperparameters()
    def _ds(self, n, seed):
        g = torch.Generator().manual_seed(seed); x = torch.randint(0, 50, (n, self.hparams.seq_len), generator=g)
        return TensorDataset(x, x.sum(1) % 4)
    def train_dataloader(self): return DataLoader(self._ds(self.hparams.n_train, 0), batch_size=self.hparams.batch_size)
    def val_dataloader(self): return DataLoader(self._ds(64, 1), batch_size=self.hparams.batch_size)

if __name__ == "__main__":
    LightningCLI(SeqModel, SeqData)
