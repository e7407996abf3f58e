"""Health check and the API's documentation page (rendered here: no third-party script)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from traintriage.web.links import Links
from traintriage.web.rendering import render

router = APIRouter()


@router.get("/healthz", tags=["meta"])
async def healthz(request: Request) -> JSONResponse:
    """200 when the app answers and its database does."""
    ping = getattr(request.app.state.store, "ping", None)
    database = await run_in_threadpool(ping) if ping else True
    return JSONResponse({"status": "ok" if database else "degraded", "database": database},
                        status_code=200 if database else 503)


@router.get("/docs", include_in_schema=False, response_class=HTMLResponse)
async def api_docs(request: Request) -> HTMLResponse:
    schema = request.app.openapi()
    operations = [(path, method.upper(), operation) for path, item in schema["paths"].items()
                  for method, operation in item.items()]
    return HTMLResponse(render("api_docs.html", Links(), operations=operations, schema=schema,
                               base=str(request.base_url).rstrip("/")))
