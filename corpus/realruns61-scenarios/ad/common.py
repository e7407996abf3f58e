import os, datetime, torch, torch.distributed as dist
def setup():
    ws = int(os.environ.get("WORLD_SIZE", "1"))
    if ws > 1 and not dist.is_initialized():
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    return (dist.get_rank() if dist.is_initialized() else 0), ws
def avg(x, ws):
    t = torch.tensor([float(x)])
    if ws > 1:
        dist.all_reduce(t); t /= ws
    return t.item()
def teardown():
    if dist.is_initialized():
        dist.destroy_process_group()
