"""Small CNN classifier (research-repo style)."""
import torch
import torch.nn as nn


class SEBlock(nn.Module):
    def __init__(self, ch, act="none"):
        super().__init__()
        self.fc1 = nn.Linear(ch, max(ch // 4, 4))
        self.fc2 = nn.Linear(max(ch // 4, 4), ch)
        # optional post-gate activation; relu_inplace saves memory
        if act == "relu_inplace":
            self.post = nn.ReLU(inplace=True)
        elif act == "relu":
            self.post = nn.ReLU()
        else:
            self.post = nn.Identity()

    def forward(self, x):
        w = x.mean(dim=(2, 3))
        w = torch.sigmoid(self.fc2(torch.relu(self.fc1(w))))
        w = self.post(w)
        return x * w[:, :, None, None]


class ConvNet(nn.Module):
    def __init__(self, in_ch=3, width=16, img_size=32, num_classes=10, se_act="none",
                 aux_head=False, feature_memory=False):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_ch, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.block = nn.Sequential(nn.Conv2d(width, width * 2, 3, padding=1), nn.BatchNorm2d(width * 2),
                                   nn.ReLU(), nn.MaxPool2d(2))
        self.se = SEBlock(width * 2, se_act)
        feat_dim = width * 2 * (img_size // 4) * (img_size // 4)
        self.head = nn.Linear(feat_dim, num_classes)
        self.aux = nn.Linear(feat_dim, num_classes) if aux_head else None
        self.feature_memory = feature_memory
        self.memory = None

    def forward(self, x):
        f = self.se(self.block(self.stem(x)))
        f = f.view(f.size(0), -1)
        if self.feature_memory:
            # momentum feature bank used for a consistency term
            if self.memory is None or self.memory.shape != f.shape:
                self.memory = f
            else:
                self.memory = 0.9 * self.memory + 0.1 * f
        out = {"logits": self.head(f), "feat": f}
        if self.aux is not None:
            out["aux_logits"] = self.aux(f)
        if self.feature_memory:
            out["memory"] = self.memory
        return out


def build_model(cfg):
    m = cfg["model"]
    return ConvNet(in_ch=m.get("in_ch", 3), width=m.get("width", 16), img_size=m["img_size"],
                   num_classes=m["num_classes"], se_act=m.get("se_act", "none"),
                   aux_head=m.get("aux_head", False), feature_memory=m.get("feature_memory", False))
