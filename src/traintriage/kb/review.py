"""Review records: which entries were checked against upstream, and against which releases.

An entry read by an engineer mid-incident is only as good as the releases it was checked
against. `kb lint` warns (it does not fail) about entries never reviewed and about entries
whose review names an older release of a system than another entry's review does: the KB
as a whole has seen that newer release, so this entry's claims may be out of date.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from traintriage.kb.schema import Entry

_NUMBER = re.compile(r"\d+")
_DOTTED = re.compile(r"\d+(?:\.\d+)+")
_RELEASE = re.compile(r"\d+")


def version_key(version: str) -> tuple[int, ...]:
    """Numeric components of the release the value starts with, so "2.9" < "2.13" and
    "0.16" < "0.19.0"; text such as "rc" is ignored, and so is a note after the release
    ("2.15.0 (PyPI wheel: +cu132)" is 2.15.0, not a release newer than every other 2.15.0). A
    dotted release wins over bare digits: "master 284c3b9 (25.05+ wording)" is 25.05, not 284."""
    release = _DOTTED.search(version) or _RELEASE.search(version)
    return tuple(int(part) for part in _NUMBER.findall(release.group(0))) if release else ()


def is_older(version: str, newest: str) -> bool:
    """Older at the precision both name: "3.11" is not older than "3.11.7" (a review of the
    3.11 line covers its patch releases), "2.13" is older than "2.15"."""
    mine, theirs = version_key(version), version_key(newest)
    common = min(len(mine), len(theirs))
    return mine[:common] < theirs[:common]


def newest_versions(entries: Iterable[Entry]) -> dict[str, str]:
    """For each system named in any review, the newest release any review names."""
    newest: dict[str, str] = {}
    for entry in entries:
        if entry.reviewed is None:
            continue
        for system, version in entry.reviewed.versions.items():
            if system not in newest or version_key(version) > version_key(newest[system]):
                newest[system] = version
    return newest


def review_warnings(entries: Iterable[Entry]) -> list[str]:
    """One line per entry that was never reviewed or was reviewed against an older release."""
    entries = sorted(entries, key=lambda e: e.id)
    newest = newest_versions(entries)
    warnings = []
    for entry in entries:
        if entry.reviewed is None:
            warnings.append(f"{entry.id}: never reviewed against upstream (no `reviewed` record)")
            continue
        stale = [f"{system} {version} (the KB names {newest[system]})"
                 for system, version in sorted(entry.reviewed.versions.items())
                 if is_older(version, newest[system])]
        if stale:
            warnings.append(f"{entry.id}: reviewed {entry.reviewed.date.isoformat()} against older releases: "
                            + ", ".join(stale))
    return warnings
