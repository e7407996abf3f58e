"""Response headers (a strict Content-Security-Policy: no inline script or style) and CSRF
protection for the page forms (a token in a SameSite cookie, repeated in the form)."""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from traintriage.web.problems import Problem

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
CSRF_COOKIE = "traintriage_csrf"
CSRF_FIELD = "csrf"


class SecurityHeaders:
    """ASGI middleware (not BaseHTTPMiddleware: it leaves the request body streaming)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [h for h in HEADERS if h[0] not in names]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def csrf_token(request: Request) -> tuple[str, bool]:
    """The caller's CSRF token, and whether it is new (then `remember_csrf` must set it)."""
    token = request.cookies.get(CSRF_COOKIE, "")
    if len(token) >= 32:
        return token, False
    return secrets.token_urlsafe(32), True


def remember_csrf(response: Response, token: str, request: Request) -> None:
    response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")


def check_csrf(request: Request, submitted: str) -> None:
    """Refuse a form post whose token differs from the cookie, or that comes from another origin."""
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Problem(403, "form posted from another site")
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if not cookie or not hmac.compare_digest(cookie.encode(), submitted.encode()):
        raise Problem(403, "the form expired or came from elsewhere: reload the page and try again")
