"""Where each page lives: absolute paths on the server, relative file links in the static site.

Templates build every link through one of these objects, so the same template serves both.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode


class Links:
    """Links for the server (`/kb/cuda-oom`)."""

    static_site = False

    def home(self) -> str:
        return "/"

    def kb(self, **query: str) -> str:
        query = {k: v for k, v in query.items() if v}
        return "/kb" + (f"?{urlencode(query)}" if query else "")

    def entry(self, entry_id: str, anchor: str = "") -> str:
        return f"/kb/{quote(entry_id)}" + (f"#{anchor}" if anchor else "")

    def compare(self, ids: list[str]) -> str | None:
        return "/kb/compare?" + urlencode({"ids": ",".join(ids)})

    def system(self, name: str) -> str:
        return f"/systems/{quote(name)}"

    def systems(self) -> str:
        return "/systems"

    def asset(self, name: str) -> str:
        return f"/static/{name}"

    def search_index(self) -> str:
        return "/api/v1/kb/search-index"

    def result(self, diagnosis_id: str, suffix: str = "") -> str:
        return f"/d/{quote(diagnosis_id)}{suffix}"


class StaticLinks(Links):
    """Relative links between the files of `traintriage site build`, from a page `depth`
    folders below the site root; compare pages exist for the pairs the site renders."""

    static_site = True

    def __init__(self, depth: int, compared: frozenset[tuple[str, ...]] = frozenset()) -> None:
        self._up = "../" * depth
        self._compared = compared

    def home(self) -> str:
        return self._up + "index.html"

    def kb(self, **query: str) -> str:
        return self._up + "index.html"

    def entry(self, entry_id: str, anchor: str = "") -> str:
        return f"{self._up}kb/{quote(entry_id)}.html" + (f"#{anchor}" if anchor else "")

    def compare(self, ids: list[str]) -> str | None:
        key = tuple(sorted(ids))
        return f"{self._up}kb/compare/{'--'.join(key)}.html" if key in self._compared else None

    def system(self, name: str) -> str:
        return f"{self._up}systems/{quote(name)}.html"

    def systems(self) -> str:
        return f"{self._up}systems/index.html"

    def asset(self, name: str) -> str:
        return f"{self._up}static/{name}"

    def search_index(self) -> str:
        return f"{self._up}search-index.json"
