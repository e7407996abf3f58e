"""The HTTP API (/api/v1): the CLI's contract (OUTPUT.md) over HTTP, errors as RFC 9457
problem details with the CLI's one-line messages."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from traintriage.kb.loader import load_kb
from traintriage.plain import plain
from traintriage.web import kbviews
from traintriage.web.body import media_type, read_body, read_multipart
from traintriage.web.diagnosing import diagnose_and_store
from traintriage.web.document import contract_part
from traintriage.web.inputs import PASTE_NAME, items_from_parts, require_log
from traintriage.web.links import Links
from traintriage.web.openapi import DIAGNOSIS_REF
from traintriage.web.problems import PROBLEM_JSON, Problem
from traintriage.web.settings import WebSettings
from traintriage.web.storage import OwnerDep, StoreDep

router = APIRouter(prefix="/api/v1", tags=["api"])
PROBLEM = {"description": "Problem details (RFC 9457)", "content": {PROBLEM_JSON: {"schema": {"type": "object"}}}}
_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": {"type": "object", "properties": {
                "file": {"type": "array", "items": {"type": "string", "format": "binary"},
                         "description": "Log files (several per-rank files keep their names; .gz/.bz2/.xz/.zst)"}}}},
            "application/json": {"schema": {"type": "object", "required": ["log"],
                                            "properties": {"log": {"type": "string"}}}},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}


async def _items(request: Request) -> list[tuple[str, bytes]]:
    settings: WebSettings = request.app.state.settings
    kind = media_type(request)
    if kind == "multipart/form-data":
        return items_from_parts(await read_multipart(request, settings.max_upload_bytes))
    body = await read_body(request, settings.max_upload_bytes)
    if kind == "application/json":
        try:
            log = json.loads(body).get("log")
        except (ValueError, AttributeError) as exc:
            raise Problem(422, 'the JSON body must be an object {"log": "..."}') from exc
        if not isinstance(log, str):
            raise Problem(422, 'the JSON body must be an object {"log": "..."}')
        return [(PASTE_NAME, log.encode("utf-8", "surrogatepass"))]
    if kind in ("text/plain", ""):
        return [(PASTE_NAME, body)]
    raise Problem(415, f"unsupported content type '{kind}': send multipart/form-data, application/json or text/plain")


def _with_link(document: dict[str, Any], diagnosis_id: str, request: Request) -> dict[str, Any]:
    return {**contract_part(document), "id": diagnosis_id,
            "url": str(request.base_url).rstrip("/") + Links().result(diagnosis_id)}


@router.post("/diagnoses", status_code=201, openapi_extra=_BODY,
             responses={201: {"description": "The diagnosis (OUTPUT.md) with its id and the result page's url",
                              "content": {"application/json": {"schema": DIAGNOSIS_REF}}},
                        413: PROBLEM, 415: PROBLEM, 422: PROBLEM})
async def create_diagnosis(request: Request, store: StoreDep,
                           owner: OwnerDep) -> JSONResponse:
    """Diagnose a log: masked at ingest, never written to disk; the masked result is stored."""
    settings: WebSettings = request.app.state.settings
    items = require_log(await _items(request), settings.max_log_bytes)
    diagnosis_id = await run_in_threadpool(diagnose_and_store, items, store, owner)
    document = await run_in_threadpool(store.get_diagnosis, diagnosis_id, owner=owner)
    assert document is not None
    body = _with_link(document, diagnosis_id, request)
    return JSONResponse(body, status_code=201, headers={"location": body["url"]})


@router.get("/diagnoses/{diagnosis_id}", responses={
    200: {"description": "The stored diagnosis", "content": {"application/json": {"schema": DIAGNOSIS_REF}}},
    404: PROBLEM})
async def get_diagnosis(diagnosis_id: str, request: Request, store: StoreDep,
                        owner: OwnerDep) -> JSONResponse:
    """A stored diagnosis, by the id its creation returned."""
    document = await run_in_threadpool(store.get_diagnosis, diagnosis_id, owner=owner)
    if document is None:
        raise Problem(404, f"no diagnosis '{diagnosis_id}'")
    return JSONResponse(_with_link(document, diagnosis_id, request))


@router.get("/kb")
async def list_entries(q: str = "", category: str = "", system: str = "", phase: str = "",
                       severity: str = "") -> list[dict[str, Any]]:
    """Entries, filtered; with `q` (words or a pasted error message), best match first."""
    filters = kbviews.Filters(q=q[:2000], category=category, system=system, phase=phase, severity=severity)
    return [{"id": e.id, "title": e.title, "category": e.category.value, "phase": e.phase.value,
             "severity": e.severity.value, "systems": list(e.systems)} for e in kbviews.browse(load_kb(), filters)]


@router.get("/kb/search-index")
async def search_index() -> list[dict[str, Any]]:
    """What the static site's search reads."""
    return kbviews.search_index(load_kb())


@router.get("/kb/{entry_id}", responses={404: PROBLEM})
async def get_entry(entry_id: str) -> Any:
    """The whole entry, as in `traintriage kb export`."""
    entry = load_kb().get(entry_id)
    if entry is None:
        raise Problem(404, f"no entry '{entry_id}' (see 'traintriage kb list')")
    return plain(entry)
