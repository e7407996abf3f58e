"""Request bodies read into memory only, never spooled to a temporary file.

Starlette's form parsing writes file parts past 1 MB to a temporary file, which would put a
user's raw log on disk. Here the body is read from the ASGI stream chunk by chunk, counted
against the size limit (413 as soon as it is passed), and multipart bodies are fed to
python-multipart's streaming parser as they arrive, so each part lands in memory once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from traintriage.web.problems import Problem, too_large

MAX_PARTS = 1024


@dataclass
class Part:
    """One multipart field: a form value (no filename) or an uploaded file."""

    name: str
    filename: str | None = None
    data: bytearray = field(default_factory=bytearray)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _check_declared_length(request: Request, limit: int) -> None:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body, refused with 413 once it passes `limit` bytes."""
    _check_declared_length(request, limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    return bytes(body)


class _PartCollector:
    """Callbacks for MultipartParser: headers of each part, then its data, appended in memory."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._headers: dict[str, bytes] = {}

    def callbacks(self) -> dict[str, object]:
        return {
            "on_part_begin": self._begin,
            "on_header_field": lambda data, start, end: self._header_name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: self._header_value.extend(data[start:end]),
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": lambda data, start, end: self.parts[-1].data.extend(data[start:end]),
        }

    def _begin(self) -> None:
        if len(self.parts) >= MAX_PARTS:
            raise Problem(422, f"too many form fields (at most {MAX_PARTS})")
        self._headers = {}
        self.parts.append(Part(name=""))

    def _header_end(self) -> None:
        self._headers[self._header_name.decode("latin-1").lower()] = bytes(self._header_value)
        self._header_name.clear()
        self._header_value.clear()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get("content-disposition", b""))
        part = self.parts[-1]
        part.name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        part.filename = filename.decode("utf-8", "replace") if filename is not None else None


async def read_multipart(request: Request, limit: int) -> list[Part]:
    """The parts of a multipart/form-data body, parsed while it streams in."""
    _check_declared_length(request, limit)
    _, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if not boundary:
        raise Problem(400, "multipart body without a boundary")
    collector = _PartCollector()
    parser = MultipartParser(boundary, collector.callbacks())  # type: ignore[arg-type]
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise too_large(limit)
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise Problem(400, "malformed multipart body") from exc
    return collector.parts
