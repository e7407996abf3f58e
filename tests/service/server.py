"""A real `traintriage serve --workers N` on 127.0.0.1, on the database (and Redis) a test chooses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from traintriage.service.store import Store


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def team_server(root: Path, database_url: str, workers: int = 1, /, **env: str) -> Iterator[str]:
    """Start the server, wait until /readyz answers 200, yield its base URL, stop it afterwards."""
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRAINTRIAGE_REDIS")}
    environment.update(TRAINTRIAGE_DATABASE_URL=database_url, TRAINTRIAGE_LOG_FORMAT="json", **env)
    log_path = root / f"server-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "traintriage.cli.entry", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--workers", str(workers)], env=environment, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"server exited: {log_path.read_text(errors='replace')[-3000:]}")
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("server did not get ready within 90 s")
                time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def sqlite_team_server(root: Path, **env: str) -> Iterator[tuple[str, Store]]:
    """A one-worker server on a fresh SQLite file, and a Store on the same file for the test's own checks."""
    database_url = f"sqlite:///{root / 'team.db'}"
    store = Store.open(database_url)
    try:
        with team_server(root, database_url, 1, **env) as url:
            yield url, store
    finally:
        store.close()
