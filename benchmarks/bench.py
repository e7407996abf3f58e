"""`make bench`: wall time, throughput and peak RSS of `traintriage diagnose`, next to
baselines measured in the same run on the same files (`rg -c -i error`, `wc -l`, plain
Python reading the file). Figures are ratios because these machines are noisy.
Writes benchmarks/RESULTS.md. BENCH_GB sizes the console logs (2), BENCH_HUGE_GB the one
big file whose peak memory must stay bounded (10; 0 skips it), BENCH_MASK=0 skips the
one-core masking figures.
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
BIN = Path(sys.executable).parent
TOOL = str(BIN / "traintriage")
GIB = 1 << 30

sys.path.insert(0, str(HERE))
from sections import write_section  # noqa: E402
from workloads import (  # noqa: E402
    FAILING_RANK,
    write_console_log,
    write_error_dense_log,
    write_fleet_dir,
    write_metric_console_log,
    write_rank_dir,
    write_small_crash,
)

_TREE_RSS = str(HERE / "tree_rss.py")


@dataclass
class Measure:
    seconds: float
    rss_mb: float
    cpu_seconds: float
    stdout: bytes

    @property
    def cores(self) -> float:
        """CPU time over wall time: above 1 when more than one core was busy."""
        return self.cpu_seconds / self.seconds if self.seconds else 0.0


def measure(command: list[str], repeat: int = 1) -> Measure:
    runs = []
    for _ in range(repeat):
        result = subprocess.run([sys.executable, _TREE_RSS, *command], capture_output=True, check=False)
        seconds, rss_kb, cpu = result.stderr.decode().split()[-3:]  # tree_rss's figures come last, after anything the command wrote
        runs.append(Measure(float(seconds), int(rss_kb) / 1024, float(cpu), result.stdout))
    best = sorted(runs, key=lambda m: m.seconds)[len(runs) // 2]
    return best


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def warm_page_cache(path: Path) -> None:
    for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if file.is_file():
            with file.open("rb") as handle:
                while handle.read(16 << 20):
                    pass


def ensure_ripgrep() -> str | None:
    found = shutil.which("rg")
    if found:
        return found
    subprocess.run(["apt-get", "install", "-y", "-q", "ripgrep"], capture_output=True, check=False)
    return shutil.which("rg")


def prepare() -> dict[str, Path]:
    WORK.mkdir(exist_ok=True)
    size = int(float(os.environ.get("BENCH_GB", "2")) * GIB)
    files = {
        "big": WORK / f"console-64rank-{size >> 20}MB.log",
        "half": WORK / f"console-64rank-{size >> 21}MB.log",
        "metric": WORK / f"metric-dense-64rank-{size >> 20}MB.log",
        "errors": WORK / "error-dense-64rank-256MB.log",
        "dir": WORK / "ranks-1024x2MB",
        "fleet": WORK / "fleet-20000x20KB",
        "small": WORK / "crash-100KB.log",
    }
    huge_gb = float(os.environ.get("BENCH_HUGE_GB", "10"))  # issue 17: memory on a 10 GB file; 0 skips it
    if huge_gb > 0:
        files["huge"] = WORK / f"console-64rank-{int(huge_gb * GIB) >> 20}MB.log"
        if not files["huge"].exists():
            print(f"generating {files['huge'].name} ...", flush=True)
            write_console_log(files["huge"], int(huge_gb * GIB))
    for key, target in (("big", size), ("half", size // 2)):
        if not files[key].exists():
            print(f"generating {files[key].name} ...", flush=True)
            write_console_log(files[key], target)
    if not files["metric"].exists():
        print(f"generating {files['metric'].name} ...", flush=True)
        write_metric_console_log(files["metric"], size)
    if not files["errors"].exists():
        print(f"generating {files['errors'].name} ...", flush=True)
        write_error_dense_log(files["errors"], 256 << 20)
    if not files["fleet"].exists():
        print("generating 20,000 small job logs ...", flush=True)
        write_fleet_dir(files["fleet"])
    if not files["dir"].exists():
        print("generating 1024 rank files ...", flush=True)
        write_rank_dir(files["dir"], 1024, 2 << 20, FAILING_RANK)
    if not files["small"].exists():
        write_small_crash(files["small"])
    return files


def baselines(path: Path, rg: str | None, repeat: int) -> dict[str, float]:
    out: dict[str, float] = {}
    targets = [str(p) for p in sorted(path.rglob("*.log"))] if path.is_dir() else [str(path)]
    if rg:
        out["rg -c -i error"] = measure([rg, "-c", "-i", "error", *([str(path)] if path.is_dir() else targets)],
                                        repeat=repeat).seconds
    # The matcher's floor: our own patterns through Hyperscan on all cores and nothing else.
    out["hyperscan pass"] = measure([sys.executable, str(HERE / "hs_floor.py"), str(path)], repeat=repeat).seconds
    out["wc -l"] = measure(["wc", "-l", *targets]).seconds if not path.is_dir() else \
        measure(["sh", "-c", f"cat {path}/*.log | wc -l"]).seconds
    read = "import sys\nfor p in sys.argv[1:]:\n    with open(p, 'rb') as f:\n        for _ in f: pass"
    out["python for-line read"] = measure([sys.executable, "-c", read, *targets]).seconds
    return out


def compile_bytecode() -> None:
    """Time the tool as installed: pip compiles a package's bytecode at install time.

    With PYTHONDONTWRITEBYTECODE set (some shells and CI images set it), an editable install
    would recompile about sixty modules on every run, ~90 ms that no installed copy pays.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    package = subprocess.run([str(BIN / "python"), "-c", "import traintriage; print(traintriage.__path__[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    compileall.compile_dir(package, quiet=1)


def main() -> None:
    rg = ensure_ripgrep()
    compile_bytecode()
    files = prepare()
    subprocess.run([TOOL, "kb", "list"], capture_output=True, check=False)  # warm the KB cache
    rows = []
    details = {}
    for key in ("big", "half", "metric", "errors", "dir", "fleet", "small", "huge"):
        path = files.get(key)
        if path is None:
            continue
        size = size_of(path)
        repeat = {"small": 5, "huge": 1}.get(key, 3)  # medians: these machines are noisy
        warm_page_cache(path)  # every tool then reads from memory, as the baselines after it do
        tool = measure([TOOL, "diagnose", "--format", "json", str(path)], repeat=repeat)
        diagnosis = json.loads(tool.stdout or b"{}")
        base = baselines(path, rg, repeat)
        rg_time = base.get("rg -c -i error")
        rows.append({
            "workload": path.name, "MB": size / (1 << 20), "seconds": tool.seconds,
            "MB/s": size / (1 << 20) / tool.seconds, "rss": tool.rss_mb, "cores": tool.cores,
            "vs rg": tool.seconds / rg_time if rg_time else float("nan"),
            "vs floor": tool.seconds / base["hyperscan pass"],
            "root": (diagnosis.get("root_cause") or {}).get("id"), "rank": diagnosis.get("initiating_rank"),
            **{f"{k} s": v for k, v in base.items()},
        })
        details[key] = tool
        print(json.dumps(rows[-1], default=str), flush=True)
    mask_row = None
    if os.environ.get("BENCH_MASK", "1") == "1":
        half_mb = size_of(files["half"]) / (1 << 20)
        masked = measure(["sh", "-c", f"{TOOL} mask - < {files['half']} > /dev/null"])
        unmasked = measure([TOOL, "diagnose", "--format", "json", "--no-mask", "--jobs", "1", str(files["half"])])
        with_mask = measure([TOOL, "diagnose", "--format", "json", "--jobs", "1", str(files["half"])])
        mask_row = (half_mb / masked.seconds, half_mb / unmasked.seconds, half_mb / with_mask.seconds)
        print(f"one core: mask {mask_row[0]:.0f} MB/s, scan {mask_row[1]:.0f} MB/s, both {mask_row[2]:.0f} MB/s", flush=True)
    write_results(rows, mask_row, rg is not None)


def write_results(rows: list[dict[str, object]], mask_mbs: tuple[float, float, float] | None, have_rg: bool) -> None:
    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    lines = [
        "# Benchmark results",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Produced by `make bench`; ratios are against baselines measured in the same run. "
        "traintriage and rg times are medians of 3 runs (5 for the small log), page cache warm.",
        "",
        "cores busy = CPU time of all processes / wall time; peak RSS = the whole process tree's, workers included. "
        "hyperscan pass = `benchmarks/hs_floor.py`: traintriage's compiled patterns run over the same input by Hyperscan "
        "on all cores, 4 MB windows, a match handler that does nothing (no masking, line numbers or parsing): "
        "the floor of any design that matches these patterns with Hyperscan.",
        "",
        "| workload | MB | traintriage s | MB/s | peak RSS MB | cores busy | × rg -c -i error | hyperscan pass s "
        "| × hyperscan pass | hyperscan pass × rg | wc -l s | python read s | root cause | initiating rank |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['workload']} | {row['MB']:.0f} | {row['seconds']:.2f} | {row['MB/s']:.0f} | {row['rss']:.0f} | "
            f"{row['cores']:.2f} | "
            f"{row['vs rg']:.2f} | {row['hyperscan pass s']:.2f} | {row['vs floor']:.2f} | "
            f"{float(row['hyperscan pass s']) / float(row['rg -c -i error s']) if have_rg else float('nan'):.2f} | "
            f"{row.get('wc -l s', float('nan')):.2f} | {row.get('python for-line read s', float('nan')):.2f} | "
            f"{row['root']} | {row['rank']} |"
        )
    if mask_mbs is not None:
        alone, scan, both = mask_mbs
        lines += ["", "On the half-size console log, one core: masking alone (`traintriage mask -`, streaming) "
                  f"{alone:.0f} MB/s; diagnosis without masking (`--no-mask --jobs 1`) {scan:.0f} MB/s; "
                  f"diagnosis with masking at ingest (`--jobs 1`) {both:.0f} MB/s."]
    if not have_rg:
        lines += ["", "ripgrep was not available; the rg column is empty."]
    small = [r for r in rows if str(r["workload"]).startswith("crash")]
    if small:
        lines += ["", f"Small-log CLI wall time (median of 5, KB cache warm): {float(small[0]['seconds']) * 1000:.0f} ms."]
    write_section(HERE / "RESULTS.md", "bench", "\n".join(lines[2:]))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
