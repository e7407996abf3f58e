"""Load test of the team server: POST /api/v1/diagnoses with a 100 KB log at 1, 8 and 32 clients.

Loopback only, bounded in count and time: a `traintriage serve` on 127.0.0.1 on a fresh
SQLite file, then on a throw-away PostgreSQL database with Redis, with an API key;
REQUESTS_PER_CLIENT requests per client at each level (and at most LEVEL_SECONDS per level). Writes its section of benchmarks/RESULTS.md (between the
bench-serve markers; the rest of the file is left as it is).
"""

from __future__ import annotations

import platform
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import httpx
import redis
import sqlalchemy as sa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks.sections import write_section  # noqa: E402
from benchmarks.workloads import write_small_crash  # noqa: E402
from tests.service.conftest import POSTGRES_ADMIN, REDIS_URL  # noqa: E402
from tests.service.server import team_server  # noqa: E402

from traintriage.service import identity  # noqa: E402
from traintriage.service.store import Store  # noqa: E402

LEVELS = (1, 8, 32)
REQUESTS_PER_CLIENT = {1: 40, 8: 10, 32: 5}
LEVEL_SECONDS = 120.0
WORKERS = 2
ERRORS: list[str] = []  # what failed, written under the table


def _level(url: str, token: str, body: bytes, clients: int, requests: int) -> dict[str, float]:
    latencies: list[float] = []
    problems: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + LEVEL_SECONDS

    def client() -> None:
        with httpx.Client(base_url=url, timeout=120, headers={"authorization": f"Bearer {token}",
                                                             "content-type": "text/plain"}) as http:
            for _ in range(requests):
                if time.monotonic() > deadline:
                    return
                started = time.perf_counter()
                try:
                    response = http.post("/api/v1/diagnoses", content=body)
                except httpx.HTTPError as exc:
                    problems.append(f"{type(exc).__name__}: {exc}")
                    continue
                with lock:
                    if response.status_code == 201:
                        latencies.append(time.perf_counter() - started)
                    else:
                        problems.append(f"HTTP {response.status_code}: {response.text[:200]}")

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))] if ordered else float("nan")
    for problem in sorted(set(problems)):
        ERRORS.append(f"{clients} clients: {problems.count(problem)} x {problem}")
    return {"clients": clients, "requests": len(latencies), "failures": len(problems),
            "p50_ms": statistics.median(ordered) * 1000 if ordered else float("nan"), "p99_ms": p99 * 1000,
            "throughput": len(latencies) / wall}


def _table(title: str, rows: list[dict[str, float]]) -> list[str]:
    lines = [f"### {title}", "", "| concurrent clients | requests | errors | p50 ms | p99 ms | diagnoses/s |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['clients']:.0f} | {r['requests']:.0f} | {r['failures']:.0f} | {r['p50_ms']:.0f} | "
              f"{r['p99_ms']:.0f} | {r['throughput']:.1f} |" for r in rows]
    return lines + [""]


def _write(tables: dict[str, list[dict[str, float]]], size: int) -> None:
    lines = ["", "## Team server: POST /api/v1/diagnoses (`make bench-serve`)", "",
             f"Machine: {platform.machine()}, 2 cores, Python {platform.python_version()}, {date.today()}. "
             f"`traintriage serve --workers {WORKERS}` on 127.0.0.1, one API key (quota checked on every "
             f"request), a {size // 1000} KB log sent as text/plain; the load generator runs on the same 2 cores. "
             "Latency is the client's: request sent to 201 received (diagnosis, masking and storage included).", ""]
    for title, rows in tables.items():
        lines += _table(title, rows)
    if ERRORS:
        lines += ["Errors (a request that failed is not in the latencies):", ""]
        lines += [f"- {error}" for error in ERRORS] + [""]
    body = "\n".join(lines[1:-1])
    write_section(HERE / "RESULTS.md", "bench-serve", body)
    print(body)


def _run(root: Path, body: bytes, database_url: str, **env: str) -> list[dict[str, float]]:
    store = Store.open(database_url)
    token = identity.create_key(store, "bench", daily_limit=1_000_000).token
    store.close()
    with team_server(root, database_url, WORKERS, **env) as url:
        _level(url, token, body, WORKERS * 2, requests=2)  # warm-up: KB and scanner ready in each worker
        return [_level(url, token, body, clients, REQUESTS_PER_CLIENT[clients]) for clients in LEVELS]


@contextmanager
def _postgres_database() -> Iterator[str]:
    """A throw-away database on the machine's PostgreSQL, dropped afterwards."""
    admin = sa.create_engine(POSTGRES_ADMIN, isolation_level="AUTOCOMMIT")
    name = f"tt_bench_{secrets.token_hex(6)}"
    with admin.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as folder:
        root = Path(folder)
        body = write_small_crash(root / "crash-100KB.log").read_bytes()
        tables = {"SQLite, quotas in the database": _run(root, body, f"sqlite:///{root / 'bench.db'}")}
        with _postgres_database() as database_url:
            prefix = f"tt-bench-{secrets.token_hex(6)}:"
            tables["PostgreSQL, quotas in Redis"] = _run(root, body, database_url, TRAINTRIAGE_REDIS_URL=REDIS_URL,
                                                         TRAINTRIAGE_REDIS_PREFIX=prefix)
            client = redis.Redis.from_url(REDIS_URL)
            for key in client.scan_iter(f"{prefix}*"):
                client.delete(key)
            client.close()
    _write(tables, len(body))


if __name__ == "__main__":
    main()
