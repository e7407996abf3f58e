"""Re-save a checkpoint the way the GPU training cluster writes it (storages tagged cuda:0)."""
import sys, torch
src, dst = sys.argv[1], sys.argv[2]
ck = torch.load(src)
torch.serialization.register_package(1, lambda obj: "cuda:0" if getattr(obj, "device", None) is not None and obj.device.type == "cpu" else None, lambda obj, loc: None)
torch.save(ck, dst)
