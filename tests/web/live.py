"""A real `traintriage serve` process on 127.0.0.1 and a free port, for API and browser tests.

Its database is a SQLite file and its TMPDIR a folder of the test's own, so that tests can
search both for what must never be written.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


@dataclass
class LiveServer:
    url: str
    database: Path
    tmpdir: Path
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def live_server(root: Path, **env: str) -> Iterator[LiveServer]:
    """Start the server, wait for /healthz, stop it (SIGTERM, then SIGKILL) afterwards."""
    database, tmpdir = root / "traintriage.sqlite", root / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # The anonymous daily allowance (3) is the team service's concern, not these tests'.
    environment = dict(os.environ, TRAINTRIAGE_DATABASE_URL=f"sqlite:///{database}", TMPDIR=str(tmpdir),
                       TRAINTRIAGE_ANONYMOUS_DAILY_LIMIT="100000")
    environment.update(env)
    log = (root / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "traintriage.cli.entry", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=environment, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {(root / 'server.log').read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not answer /healthz within 60 s")
            time.sleep(0.2)
        yield LiveServer(url=url, database=database, tmpdir=tmpdir, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
