"""The encyclopedia: browse and search, entry pages, comparisons, system hubs."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse

from traintriage.kb.loader import load_kb
from traintriage.web import kbviews
from traintriage.web.links import Links
from traintriage.web.problems import Problem
from traintriage.web.rendering import render

router = APIRouter(include_in_schema=False)
MAX_QUERY = 2000


def kb_index_page(links: Links, filters: kbviews.Filters) -> str:
    kb = load_kb()
    return render("kb_index.html", links, filters=filters, facets=kbviews.facets(kb),
                  entries=kbviews.browse(kb, filters), total=len(kb))


@router.get("/kb", response_class=HTMLResponse)
async def kb_index(q: str = "", category: str = "", system: str = "", phase: str = "",
                   severity: str = "") -> HTMLResponse:
    filters = kbviews.Filters(q=q[:MAX_QUERY], category=category, system=system, phase=phase, severity=severity)
    return HTMLResponse(kb_index_page(Links(), filters))


def compare_page(links: Links, ids: list[str]) -> str:
    kb = load_kb()
    entries = [kb.entries[i] for i in ids]
    return render("compare.html", links, entries=entries, notes=kbviews.compare_notes(entries),
                  apart=kbviews.distinguishing_signatures(entries))


@router.get("/kb/compare", response_class=HTMLResponse)
async def compare(ids: str = "") -> HTMLResponse:
    wanted = list(dict.fromkeys(i.strip() for i in ids.split(",") if i.strip()))
    unknown = [i for i in wanted if load_kb().get(i) is None]
    if unknown:
        raise Problem(404, f"no entry '{unknown[0]}' (see the encyclopedia)")
    if not 2 <= len(wanted) <= 3:
        raise Problem(422, "compare two or three entries: /kb/compare?ids=a,b or ?ids=a,b,c")
    return HTMLResponse(compare_page(Links(), wanted))


def entry_page(links: Links, entry_id: str) -> str:
    kb = load_kb()
    entry = kb.get(entry_id)
    if entry is None:
        raise Problem(404, f"no entry '{entry_id}' (see the encyclopedia)")
    related = [kb.entries[i] for i in entry.related if i in kb.entries]
    return render("entry.html", links, entry=entry, related=related, stage=kbviews.stage_of(entry), kb=kb)


@router.get("/kb/{entry_id}", response_class=HTMLResponse)
async def entry(entry_id: str) -> HTMLResponse:
    return HTMLResponse(entry_page(Links(), entry_id))


def systems_page(links: Links) -> str:
    return render("systems.html", links, systems=kbviews.systems(load_kb()))


@router.get("/systems", response_class=HTMLResponse)
async def systems() -> HTMLResponse:
    return HTMLResponse(systems_page(Links()))


def system_page(links: Links, system: str) -> str:
    stages = kbviews.system_hub(load_kb(), system)
    if not stages:
        raise Problem(404, f"no entry names the system '{system}'")
    return render("system.html", links, system=system, stages=stages)


@router.get("/systems/{system}", response_class=HTMLResponse)
async def system_hub(system: str, request: Request) -> HTMLResponse:
    return HTMLResponse(system_page(Links(), system))
