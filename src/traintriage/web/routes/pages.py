"""The diagnose page, its form posts (post/redirect/get) and the result page."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from traintriage.errors import TraintriageError
from traintriage.kb.loader import load_kb
from traintriage.report.render import render_json, render_markdown, report_words
from traintriage.web import charts
from traintriage.web.body import Part, media_type, read_multipart
from traintriage.web.diagnosing import diagnose_and_store, diagnosis_of
from traintriage.web.document import VIEWS, contract_part
from traintriage.web.inputs import items_from_parts, require_log
from traintriage.web.links import Links
from traintriage.web.problems import Problem, problem_of
from traintriage.web.rendering import render
from traintriage.web.samples import featured, sample_bytes, samples
from traintriage.web.security import CSRF_FIELD, check_csrf, csrf_token, remember_csrf
from traintriage.web.settings import WebSettings
from traintriage.web.storage import DiagnosisStore, OwnerDep, StoreDep

router = APIRouter(include_in_schema=False)
ECHO_LIMIT = 1 << 20
"""A pasted log up to this size is given back in the form when it is refused (to fix and resend)."""
KNOWN_FIELDS = frozenset({"schema", "status", "root_cause", "candidates", "initiating_rank", "suspects", "ranks",
                          "collateral", "anomalies", "timeline", "fix", "verify", "environment", "unknown",
                          "warnings", "stats", "facts", "notes", VIEWS})


def _settings(request: Request) -> WebSettings:
    settings: WebSettings = request.app.state.settings
    return settings


def _form_page(request: Request, *, status: int = 200, error: str | None = None, pasted: str = "") -> Response:
    token, new = csrf_token(request)
    html = render("index.html", Links(), csrf=token, error=error, pasted=pasted, samples=list(samples().values()),
                  featured=featured(), limit_mb=_settings(request).max_upload_bytes >> 20)
    response = HTMLResponse(html, status_code=status)
    if new:
        remember_csrf(response, token, request)
    return response


@router.get("/", response_class=HTMLResponse)
async def home(request: Request) -> Response:
    return _form_page(request)


async def _form_parts(request: Request) -> list[Part]:
    if media_type(request) != "multipart/form-data":
        raise Problem(415, "the form must be sent as multipart/form-data")
    parts = await read_multipart(request, _settings(request).max_upload_bytes)
    check_csrf(request, next((p.text for p in parts if p.name == CSRF_FIELD), ""))
    return parts


async def _store_and_redirect(items: list[tuple[str, bytes]], store: DiagnosisStore, owner: str | None) -> Response:
    diagnosis_id = await run_in_threadpool(diagnose_and_store, items, store, owner)
    return RedirectResponse(Links().result(diagnosis_id), status_code=303)


@router.post("/diagnose")
async def diagnose_form(request: Request, store: StoreDep,
                        owner: OwnerDep) -> Response:
    """The paste/upload form: diagnose, store, redirect to the result (or show the form again
    with a one-line error)."""
    pasted = ""
    try:
        parts = await _form_parts(request)
        pasted = next((p.text for p in parts if p.name == "log" and p.filename is None and len(p.data) <= ECHO_LIMIT), "")
        items = require_log(items_from_parts(parts), _settings(request).max_log_bytes)
        return await _store_and_redirect(items, store, owner)
    except (Problem, TraintriageError) as exc:
        problem = exc if isinstance(exc, Problem) else problem_of(exc)
        if problem.status == 403:
            raise
        return _form_page(request, status=problem.status, error=problem.detail, pasted=pasted)


@router.post("/samples")
async def try_sample(request: Request, store: StoreDep,
                     owner: OwnerDep) -> Response:
    parts = await _form_parts(request)
    chosen = next((p.text for p in parts if p.name == "sample"), "")
    item = sample_bytes(chosen)
    if item is None:
        return _form_page(request, status=422, error="choose one of the sample logs")
    return await _store_and_redirect([item], store, owner)


def _stored(diagnosis_id: str, store: DiagnosisStore, owner: str | None) -> dict[str, Any]:
    document = store.get_diagnosis(diagnosis_id, owner=owner)
    if document is None:
        raise Problem(404, "no such result (results are kept by their link only)")
    return document


@router.get("/d/{diagnosis_id}", response_class=HTMLResponse)
async def result(diagnosis_id: str, store: StoreDep, owner: OwnerDep) -> Response:
    document = await run_in_threadpool(_stored, diagnosis_id, store, owner)
    return HTMLResponse(render("result.html", Links(), **page_context(diagnosis_id, document)))


def page_context(diagnosis_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """What result.html draws from a stored document."""
    views = document.get(VIEWS) or {}
    root = document.get("root_cause") or None
    explained = {c["id"] for c in document.get("collateral", [])}
    return {
        "id": diagnosis_id, "d": document, "kb": load_kb(), "entry": load_kb().get(root["id"]) if root else None,
        "words": _report_words(document),
        "context": {(c["source"], c["line"]): c for c in views.get("context", [])},
        "timeline": charts.timeline(views.get("rank_events", [])),
        "plots": [p for p in (charts.plot(s) for s in views.get("plots", [])) if p is not None],
        "alternatives": [c for c in document.get("candidates", [])[1 if root else 0:] if c["id"] not in explained],
        "extra": {k: v for k, v in contract_part(document).items() if k not in KNOWN_FIELDS and v},
    }


def _report_words(document: dict[str, Any]) -> dict[str, str | None]:
    """The sentences the CLI's reports make of a diagnosis (one-line summary, facts of the run,
    first failed rank, exception, the user's frame, why these fix steps come first), made by the
    same function from the same report model."""
    try:
        diagnosis = diagnosis_of(document)
    except ValueError:  # a document stored by an older schema: the page shows its fields as they are
        return dict.fromkeys(("summary", "facts", "first_failed", "exception", "your_code", "fix_reason"))
    return report_words(diagnosis)


_DOWNLOADS = {"json": (render_json, "application/json"), "md": (render_markdown, "text/markdown")}


@router.get("/d/{diagnosis_id}/diagnosis.{kind}")
async def result_download(diagnosis_id: str, kind: str, store: StoreDep, owner: OwnerDep) -> Response:
    """The result as the CLI's JSON (the OUTPUT.md document) or Markdown (for an issue)."""
    if kind not in _DOWNLOADS:
        raise Problem(404, "downloads are diagnosis.json and diagnosis.md")
    document = await run_in_threadpool(_stored, diagnosis_id, store, owner)
    renderer, media = _DOWNLOADS[kind]
    return PlainTextResponse(renderer(diagnosis_of(document)), media_type=media, headers={
        "content-disposition": f'attachment; filename="traintriage-{diagnosis_id}.{kind}"'})
