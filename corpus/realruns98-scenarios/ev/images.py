"""Image-folder classifier fed by PIL decoding in DataLoader workers.

--mode ok|truncated|skipbad|nototensor
"""
import argparse, glob, logging, os, random, sys, time, warnings
import numpy as np
import torch, torch.nn as nn
from PIL import Image, ImageFile, UnidentifiedImageError
from torch.utils.data import DataLoader, Dataset

ROOT = "/work/rr98/ev/data/images"
log = logging.getLogger("imgtrain")
CLASSES = ["circle", "square", "stripe"]


def build(n_per_class=48):
    for c in CLASSES:
        d = f"{ROOT}/train/{c}"
        os.makedirs(d, exist_ok=True)
        for k in range(n_per_class):
            p = f"{d}/{c}_{k:04d}.jpg"
            if os.path.exists(p):
                continue
            rng = np.random.default_rng(hash((c, k)) % 2**32)
            a = (rng.random((48, 48, 3)) * 60).astype(np.uint8)
            if c == "circle":
                yy, xx = np.mgrid[:48, :48]; a[(yy - 24) ** 2 + (xx - 24) ** 2 < 200] += 150
            elif c == "square":
                a[12:36, 12:36] += 150
            else:
                a[:, ::6] += 150
            Image.fromarray(a).save(p, quality=90)


class Folder(Dataset):
    def __init__(self, root, to_tensor=True, skip_bad=False):
        self.items = [(p, CLASSES.index(os.path.basename(os.path.dirname(p))))
                      for p in sorted(glob.glob(f"{root}/*/*.jpg"))]
        self.to_tensor, self.skip_bad = to_tensor, skip_bad

    def __len__(self):
        return len(self.items)

    def load(self, i):
        p, y = self.items[i]
        img = Image.open(p).convert("RGB").resize((32, 32))
        if random.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        if self.to_tensor:
            img = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return img, y

    def __getitem__(self, i):
        if not self.skip_bad:
            return self.load(i)
        try:
            return self.load(i)
        except (OSError, UnidentifiedImageError) as e:
            log.warning(f"corrupt image {self.items[i][0]}: {e!r}; substituting sample {(i + 1) % len(self)}")
            return self.load((i + 1) % len(self))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--bs", type=int, default=12)
    ap.add_argument("--pin", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(processName)s %(name)s - %(message)s")
    build()
    ds = Folder(f"{ROOT}/train", to_tensor=(args.mode != "nototensor"), skip_bad=(args.mode == "skipbad"))
    log.info(f"found {len(ds)} images in {len(CLASSES)} classes")
    dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers, pin_memory=args.pin,
                    persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(32, len(CLASSES)))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    from tqdm import tqdm
    for ep in range(args.epochs):
        correct = total = 0
        pbar = tqdm(dl, desc=f"Epoch {ep + 1}/{args.epochs}", unit="batch")
        for x, y in pbar:
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            opt.zero_grad(); loss.backward(); opt.step()
            correct += (out.argmax(1) == y).sum().item(); total += len(y)
            pbar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{correct / total:.3f}")
        log.info(f"epoch {ep + 1}: train_acc={correct / total:.4f} loss={loss.item():.4f}")
    torch.save(model.state_dict(), "/tmp/ev_img_model.pt")
    log.info("saved model to /tmp/ev_img_model.pt")


if __name__ == "__main__":
    main()
