"""`traintriage site build OUT/`: the encyclopedia as static files, from the server's templates.

Links are relative (the site works from any folder of any web server); search and filters
run in the browser over `search-index.json`. Comparison pages exist for each entry and
its related entries.
"""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from pathlib import Path

from traintriage.kb.loader import load_kb
from traintriage.web import kbviews
from traintriage.web.links import StaticLinks
from traintriage.web.routes.kb import compare_page, entry_page, kb_index_page, system_page, systems_page

ASSETS = ("style.css", "app.js", "search.js")


def related_pairs() -> frozenset[tuple[str, ...]]:
    kb = load_kb()
    return frozenset(tuple(sorted((entry.id, other))) for entry in kb.entries.values()
                     for other in entry.related if other in kb.entries and other != entry.id)


def build_site(out: Path) -> int:
    """Write the site under `out`; returns the number of pages written."""
    kb = load_kb()
    pairs = related_pairs()
    pages: dict[str, str] = {"index.html": kb_index_page(StaticLinks(0, pairs), kbviews.Filters())}
    for entry_id in sorted(kb.entries):
        pages[f"kb/{entry_id}.html"] = entry_page(StaticLinks(1, pairs), entry_id)
    for pair in sorted(pairs):
        pages[f"kb/compare/{'--'.join(pair)}.html"] = compare_page(StaticLinks(2, pairs), list(pair))
    pages["systems/index.html"] = systems_page(StaticLinks(1, pairs))
    for name, _ in kbviews.systems(kb):
        pages[f"systems/{name}.html"] = system_page(StaticLinks(1, pairs), name)
    for relative, html in pages.items():
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
    (out / "search-index.json").write_text(json.dumps(kbviews.search_index(kb), ensure_ascii=False), encoding="utf-8")
    (out / "static").mkdir(parents=True, exist_ok=True)
    for asset in ASSETS:
        with (files("traintriage.web") / "static" / asset).open("rb") as source, (out / "static" / asset).open("wb") as dest:
            shutil.copyfileobj(source, dest)
    return len(pages)
