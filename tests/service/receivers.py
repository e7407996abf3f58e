"""Local receivers on 127.0.0.1 for alert tests: an HTTP endpoint that fails on cue, and a tiny SMTP server."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answers to give, in order; then 200


@contextmanager
def http_receiver(fail_first: int = 0) -> Iterator[tuple[str, Received]]:
    """An HTTP server that answers 500 to the first `fail_first` POSTs, then 200; records every request."""
    received = Received(statuses=[500] * fail_first)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
            status = received.statuses.pop(0) if received.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def smtp_receiver() -> Iterator[tuple[int, list[str]]]:
    """Just enough SMTP to accept messages; yields the port and the received message texts."""
    messages: list[str] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(b"220 test ESMTP\r\n")
            while line := self.rfile.readline():
                verb = line[:4].upper()
                if verb in (b"EHLO", b"HELO"):
                    self.wfile.write(b"250 test\r\n")
                elif verb == b"DATA":
                    self.wfile.write(b"354 go on\r\n")
                    lines = []
                    while (data := self.rfile.readline()) not in (b".\r\n", b""):
                        lines.append(data.decode())
                    messages.append("".join(lines))
                    self.wfile.write(b"250 queued\r\n")
                elif verb == b"QUIT":
                    self.wfile.write(b"221 bye\r\n")
                    return
                else:
                    self.wfile.write(b"250 ok\r\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], messages
    finally:
        server.shutdown()
        server.server_close()
