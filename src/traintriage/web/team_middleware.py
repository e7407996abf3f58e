"""Quotas, metrics and access logs around every request (pure ASGI: request bodies keep streaming).

A request that would store a diagnosis (the API, the paste form, a sample) takes one unit of
the caller's daily allowance before its body is read; over the limit it gets 429 with
`Retry-After` and `RateLimit-*` headers (problem+json for the API, a page for a browser).
A request that then fails on its input gives the unit back. A stored diagnosis is counted
and checked against alert rules in the background.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from traintriage.service.identity import Caller, IdentityError
from traintriage.service.quotas import Allowance
from traintriage.web.links import Links
from traintriage.web.problems import PROBLEM_JSON
from traintriage.web.rendering import render
from traintriage.web.security import HEADERS
from traintriage.web.team_context import caller_of, team_of
from traintriage.web.team_metrics import LATENCY, QUOTA_REJECTIONS, REQUESTS

METERED = frozenset({("POST", "/api/v1/diagnoses"), ("POST", "/diagnose"), ("POST", "/samples")})
_RESULT = re.compile(r"/d/([A-Za-z0-9_-]{1,64})(?:$|[?#])")
log = logging.getLogger("traintriage.web.access")
# Answers given here, before the app, carry the app's security headers themselves.
SECURITY_HEADERS = {name.decode(): value.decode() for name, value in HEADERS}


def rate_headers(allowance: Allowance, seconds_to_reset: int) -> dict[str, str]:
    return {"RateLimit-Limit": str(allowance.limit), "RateLimit-Remaining": str(allowance.remaining),
            "RateLimit-Reset": str(seconds_to_reset), "RateLimit-Policy": f"{allowance.limit};w=86400"}


def _wants_json(request: Request) -> bool:
    """The API answers problem+json; the forms answer a page (their script shows its error line)."""
    return request.url.path.startswith("/api/") or "json" in request.headers.get("accept", "")


def _quota_response(request: Request, caller: Caller, allowance: Allowance, seconds: int) -> Response:
    resets = f"{allowance.resets_at:%Y-%m-%d %H:%M} UTC"
    more = ("An evaluation code gives 50 a day: ask for one at /evaluation-code." if caller.kind == "anonymous"
            else "Ask your traintriage admin for a higher limit.")
    detail = f"daily allowance of {allowance.limit} diagnoses used; it resets at {resets}. {more}"
    headers = {"Retry-After": str(seconds), **rate_headers(allowance, seconds), **SECURITY_HEADERS}
    if _wants_json(request):
        body = {"type": "about:blank", "title": "Too many requests", "status": 429, "detail": detail,
                "instance": request.url.path}
        return JSONResponse(body, status_code=429, media_type=PROBLEM_JSON, headers=headers)
    html = render("team_quota.html", Links(), caller=caller, allowance=allowance, resets=resets, seconds=seconds)
    return HTMLResponse(html, status_code=429, headers=headers)


def _identity_response(request: Request, error: IdentityError) -> Response:
    body = {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": str(error),
            "instance": request.url.path}
    if _wants_json(request):
        return JSONResponse(body, status_code=401, media_type=PROBLEM_JSON, headers=SECURITY_HEADERS)
    html = render("team_message.html", Links(), title="Sign-in needed", message=str(error), error=True)
    response = HTMLResponse(html, status_code=401, headers=SECURITY_HEADERS)
    response.delete_cookie("traintriage_session", path="/")
    return response


class TeamMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        metered = (scope["method"], scope["path"]) in METERED
        caller: Caller | None = None
        allowance: Allowance | None = None
        extra_headers: list[tuple[bytes, bytes]] = []
        if metered:
            team = team_of(scope["app"])
            try:
                caller = await run_in_threadpool(caller_of, request)
            except IdentityError as exc:
                await _identity_response(request, exc)(scope, receive, send)
                self._record(scope, 401, started, None)
                return
            allowance = await run_in_threadpool(team.quotas.take, caller.subject, caller.daily_limit)
            seconds = allowance.seconds_to_reset(team.store.clock())
            if not allowance.allowed:
                QUOTA_REJECTIONS.labels(caller.kind).inc()
                await _quota_response(request, caller, allowance, seconds)(scope, receive, send)
                self._record(scope, 429, started, caller)
                return
            extra_headers = [(k.lower().encode(), v.encode()) for k, v in rate_headers(allowance, seconds).items()]
        outcome: dict[str, Any] = {"status": 500, "location": ""}

        async def send_and_watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome["status"] = message["status"]
                headers = list(message.get("headers", []))
                outcome["location"] = next((v.decode("latin-1") for k, v in headers if k == b"location"), "")
                message["headers"] = headers + extra_headers
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        finally:
            self._record(scope, outcome["status"], started, caller)
            if metered and caller is not None:
                await self._after(scope, caller, outcome)

    async def _after(self, scope: Scope, caller: Caller, outcome: dict[str, Any]) -> None:
        team = team_of(scope["app"])
        found = _RESULT.search(outcome["location"])
        if outcome["status"] in (201, 303) and found:
            team.after_diagnosis(found.group(1))
        elif outcome["status"] >= 400:
            await run_in_threadpool(team.quotas.give_back, caller.subject)

    @staticmethod
    def _record(scope: Scope, status: int, started: float, caller: Caller | None) -> None:
        metered = (scope["method"], scope["path"]) in METERED
        route = getattr(scope.get("route"), "path", None) or (scope["path"] if metered else "unmatched")
        seconds = time.perf_counter() - started
        REQUESTS.labels(scope["method"], route, str(status)).inc()
        LATENCY.labels(route).observe(seconds)
        log.info("request", extra={"event": "request", "method": scope["method"], "route": route, "status": status,
                                   "ms": round(seconds * 1000, 1), "caller": caller.kind if caller else None})

