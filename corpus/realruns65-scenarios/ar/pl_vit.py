"""Lightning fine-tuning of a tiny ViT (built from config) on synthetic images. --fault selects the mistake."""
import argparse, os
import torch
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from transformers import ViTConfig, ViTForImageClassification

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--strategy", default="ddp")
p.add_argument("--precision", default="32-true")
p.add_argument("--img", type=int, default=32)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--ckpt", default=None)
p.add_argument("--root", default="/tmp/rr65ar_pl")
args = p.parse_args()


class LitViT(L.LightningModule):
    def __init__(self, num_labels=4):
        super().__init__()
        self.save_hyperparameters()
        cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=num_labels)
        self.model = ViTForImageClassification(cfg)

    def training_step(self, batch, batch_idx):
        x, y = batch
        out = self.model(pixel_values=x, labels=y)
        self.log("train_loss", out.loss, prog_bar=True)
        return out.loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        out = self.model(pixel_values=x, labels=y)
        self.log("val_loss", out.loss)
        self.log("val_acc", (out.logits.argmax(-1) == y).float().mean())


class LitViTWithOpt(LitViT):
    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=1e-3)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, 10)}


class NpyImages(torch.utils.data.Dataset):
    """one .npy file per image (as exported by the preprocessing job), label in the file name"""
    def __init__(self, root):
        import glob
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        import numpy as np
        f = self.files[i]
        x = torch.from_numpy(np.load(f)).float()
        y = int(os.path.basename(f).split("_")[1].split(".")[0])
        return x, y


def export_npy(root, n, img, corrupt_idx=None):
    import numpy as np
    os.makedirs(root, exist_ok=True)
    g = np.random.default_rng(0)
    for i in range(n):
        path = os.path.join(root, f"{i:05d}_{i % 4}.npy")
        np.save(path, g.standard_normal((3, img, img)).astype("float32"))
        if i == corrupt_idx:
            # export job was interrupted while writing this file
            with open(path, "r+b") as fh:
                fh.truncate(1500)


def make_data(n, img, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, img, img, generator=g)
    y = torch.randint(0, 4, (n,), generator=g)
    return TensorDataset(x, y)


if __name__ == "__main__":
    L.seed_everything(0)
    cls = LitViT if args.fault == "no-optim" else LitViTWithOpt
    model = cls()
    if args.fault == "corrupt-npy":
        if int(os.environ.get("LOCAL_RANK", 0)) == 0 and not os.path.exists(os.path.join(args.root, "imgs")):
            export_npy(os.path.join(args.root, "imgs"), 160, args.img, corrupt_idx=117)
        train = DataLoader(NpyImages(os.path.join(args.root, "imgs")), batch_size=16, shuffle=True, num_workers=2)
    else:
        train = DataLoader(make_data(128, args.img, 0), batch_size=16, shuffle=True)
    val = DataLoader(make_data(32, args.img, 1), batch_size=16)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy, max_epochs=args.epochs,
                        precision=args.precision, default_root_dir=args.root, log_every_n_steps=5,
                        enable_model_summary=True)
    trainer.fit(model, train, val, ckpt_path=args.ckpt)
    if trainer.is_global_zero:
        print("best/last checkpoint:", trainer.checkpoint_callback.best_model_path)
