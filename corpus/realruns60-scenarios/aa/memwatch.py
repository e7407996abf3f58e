"""Per-process RSS watchdog (sidecar). Kills the offending process with SIGKILL when it exceeds its budget."""
import argparse, os, signal, sys, time

p = argparse.ArgumentParser()
p.add_argument("--match", default="memlimits.py")
p.add_argument("--limit-mb", type=int, default=1000)
p.add_argument("--warn-frac", type=float, default=0.85)
p.add_argument("--interval", type=float, default=0.5)
p.add_argument("--duration", type=float, default=150)
a = p.parse_args()


def procs():
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            if a.match not in cmd or "memwatch" in cmd or "torch.distributed.run" in cmd or "torchrun" in cmd:
                continue
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            rank = next((e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"RANK=")), "?")
            rss = 0
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) // 1024
            ppid = int(open(f"/proc/{pid}/stat").read().split(")")[1].split()[1])
            yield int(pid), rank, rss, ppid
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue


def ts():
    return time.strftime("%H:%M:%S")


print(f"[memwatch {ts()}] watching '{a.match}' processes, per-process RSS limit {a.limit_mb} MiB", flush=True)
warned = set()
seen = False
t0 = time.time()
while time.time() - t0 < a.duration:
    ps = list(procs())
    if ps:
        seen = True
    elif seen:
        break
    for pid, rank, rss, ppid in ps:
        if rss > a.limit_mb:
            print(f"[memwatch {ts()}] pid {pid} (RANK={rank}, ppid {ppid}) RSS {rss} MiB exceeds limit {a.limit_mb} MiB -> sending SIGKILL", flush=True)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif rss > a.warn_frac * a.limit_mb and pid not in warned:
            warned.add(pid)
            print(f"[memwatch {ts()}] WARNING pid {pid} (RANK={rank}) RSS {rss} MiB is {100*rss/a.limit_mb:.0f}% of limit", flush=True)
    time.sleep(a.interval)
print(f"[memwatch {ts()}] exiting", flush=True)
