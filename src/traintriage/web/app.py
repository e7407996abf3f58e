"""The FastAPI application: routes, security headers, error pages and problem details.

`traintriage serve` runs `create_app` on uvicorn (as a factory, so each worker builds its own
app and opens its own store). No response ever carries a traceback: unexpected errors are
logged on the server and answered with a one-line message.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.resources import files

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from traintriage import __version__
from traintriage.errors import TraintriageError
from traintriage.web import openapi, routes_team
from traintriage.web.links import Links
from traintriage.web.problems import PROBLEM_JSON, Problem, problem_of
from traintriage.web.rendering import render
from traintriage.web.routes import api, kb, meta, pages
from traintriage.web.security import SecurityHeaders
from traintriage.web.settings import WebSettings
from traintriage.web.storage import DiagnosisStore, open_store

log = logging.getLogger("traintriage.web")
StoreFactory = Callable[[str | None], DiagnosisStore]


def create_app(settings: WebSettings | None = None, store_factory: StoreFactory = open_store) -> FastAPI:
    settings = settings or WebSettings.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.store = store_factory(settings.database_url)
        try:
            yield
        finally:
            app.state.store.close()

    app = FastAPI(
        title="traintriage",
        version=__version__,
        summary="Why did this training run die? Root cause, first failed rank, collateral, fix.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=str(files("traintriage.web") / "static")), name="static")
    app.include_router(pages.router)
    app.include_router(kb.router)
    app.include_router(api.router)
    app.include_router(meta.router)
    routes_team.install(app)  # team service: identity, quotas, history, alerts, questions (issue 16)
    _install_error_handlers(app)
    openapi.install(app)
    return app


def _wants_problem_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or "text/html" not in request.headers.get("accept", "text/html")


def problem_response(request: Request, problem: Problem) -> Response:
    """problem+json for the API, an HTML page for a browser."""
    if _wants_problem_json(request):
        return JSONResponse(problem.document(request.url.path), status_code=problem.status, media_type=PROBLEM_JSON)
    html = render("error.html", Links(), problem=problem)
    return HTMLResponse(html, status_code=problem.status)


def _install_error_handlers(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Problem)
        return problem_response(request, exc)

    async def on_engine_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, TraintriageError)
        return problem_response(request, problem_of(exc))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        detail = exc.detail if isinstance(exc.detail, str) and exc.status_code != 404 else "no such page"
        return problem_response(request, Problem(exc.status_code, detail))

    async def on_invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return problem_response(request, Problem(422, f"{where}: {first.get('msg', 'invalid request')}"))

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s", request.url.path)
        message = "out of memory" if isinstance(exc, MemoryError) else "internal error: the server could not answer"
        return problem_response(request, Problem(500, message))

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(TraintriageError, on_engine_error)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(Exception, on_unexpected)
