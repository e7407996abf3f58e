"""Errors a request can cause, as RFC 9457 problem details with the CLI's one-line messages."""

from __future__ import annotations

from dataclasses import dataclass

from traintriage.errors import BinaryInputError, InputError, TraintriageError, UsageError

PROBLEM_JSON = "application/problem+json"

_TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    500: "Internal server error",
}


@dataclass
class Problem(Exception):
    """A refused request: HTTP status and a one-line detail a user can act on."""

    status: int
    detail: str

    @property
    def title(self) -> str:
        return _TITLES.get(self.status, "Error")

    def document(self, instance: str | None = None) -> dict[str, object]:
        body: dict[str, object] = {"type": "about:blank", "title": self.title, "status": self.status,
                                   "detail": self.detail}
        if instance:
            body["instance"] = instance
        return body


def problem_of(error: TraintriageError) -> Problem:
    """The HTTP status the engine's own errors map to: binary 415, other input errors 422."""
    if isinstance(error, BinaryInputError):
        return Problem(415, str(error))
    if isinstance(error, (InputError, UsageError)):
        return Problem(422, str(error))
    return Problem(500, "the server could not diagnose this log")


def too_large(limit_bytes: int) -> Problem:
    megabytes = limit_bytes // (1 << 20)
    return Problem(413, f"upload larger than {megabytes} MB; run 'traintriage diagnose' on your machine for bigger logs")
