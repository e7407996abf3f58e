"""Load the knowledge base: YAML entries validated by the schema, then cross-checked.

Parsing and validating ~150 YAML files and compiling the scanner costs far more than
a small diagnosis, so the result is cached on disk keyed by the entry files' names, sizes and times;
any change to an entry (or to this package version) invalidates the cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from traintriage import __version__
from traintriage.errors import KnowledgeBaseError
from traintriage.kb.schema import Entry, validate_entry

KB_ROOT = Path(__file__).resolve().parent
ENTRIES_DIR = KB_ROOT / "entries"
EXAMPLES_DIR = KB_ROOT / "examples"


@dataclass
class KnowledgeBase:
    entries: Mapping[str, Entry]
    files: dict[str, Path] = field(default_factory=dict)

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)

    def __len__(self) -> int:
        return len(self.entries)


class PackedEntries(Mapping[str, Entry]):
    """Entries kept pickled one by one and unpacked when first read: a diagnosis reads a
    handful of them (its candidates'), and unpickling them all was a tenth of the start-up
    of a small diagnosis."""

    def __init__(self, packed: dict[str, bytes]) -> None:
        self._packed = packed
        self._unpacked: dict[str, Entry] = {}

    @classmethod
    def pack(cls, entries: Mapping[str, Entry]) -> PackedEntries:
        return cls({key: pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL) for key, entry in entries.items()})

    def __getitem__(self, key: str) -> Entry:
        entry = self._unpacked.get(key)
        if entry is None:
            entry = self._unpacked[key] = pickle.loads(self._packed[key])
        return entry

    def __contains__(self, key: object) -> bool:
        return key in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def __reduce__(self) -> tuple[type[PackedEntries], tuple[dict[str, bytes]]]:
        return PackedEntries, (self._packed,)


def entry_files(root: Path = ENTRIES_DIR) -> list[Path]:
    return sorted(root.glob("*/*.yaml"))


_EXTRA = ("unexpected_keyword_argument", "extra_forbidden")
_UNKNOWN_KEY = "unknown key (a typo?)"


def parse_entry(path: Path) -> Entry:
    """Validate one entry file; errors name the file and the field."""
    import yaml  # parsing happens on a cache miss only: keep it off the start-up path
    from pydantic import ValidationError

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except yaml.YAMLError as exc:
        raise KnowledgeBaseError(f"{path.name}: invalid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise KnowledgeBaseError(f"{path.name}: an entry must be a mapping")
    try:
        entry = validate_entry(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {_UNKNOWN_KEY if err['type'] in _EXTRA else err['msg']}"
            for err in exc.errors()[:5]
        )
        raise KnowledgeBaseError(f"{path.name}: {problems}") from exc
    if entry.id != path.stem:
        raise KnowledgeBaseError(f"{path.name}: id '{entry.id}' differs from the file name")
    if entry.category.value != path.parent.name:
        raise KnowledgeBaseError(f"{path.name}: category '{entry.category.value}' but filed under '{path.parent.name}/'")
    return entry


def load_entries(root: Path = ENTRIES_DIR) -> KnowledgeBase:
    """All entries; an invalid one is fatal unless TRAINTRIAGE_KB_SKIP_INVALID=1 (KB authors
    with work in progress), which skips it with a warning."""
    files = entry_files(root)
    entries: dict[str, Entry] = {}
    paths: dict[str, Path] = {}
    lenient = os.environ.get("TRAINTRIAGE_KB_SKIP_INVALID") == "1"
    for path in files:
        try:
            entry = parse_entry(path)
        except KnowledgeBaseError as exc:
            if not lenient:
                raise
            print(f"traintriage: warning: skipping {exc}", file=sys.stderr)
            continue
        if entry.id in entries:
            raise KnowledgeBaseError(f"duplicate id '{entry.id}' in {path} and {paths[entry.id]}")
        entries[entry.id] = entry
        paths[entry.id] = path
    return KnowledgeBase(entries=entries, files=paths)


def check_links(entries: dict[str, Entry]) -> None:
    """`related`, `explains` and `specializes` must name entries that exist."""
    for entry in entries.values():
        for kind, ids in (("related", entry.related), ("explains", entry.explains), ("specializes", entry.specializes)):
            missing = [i for i in ids if i not in entries]
            if missing:
                raise KnowledgeBaseError(f"{entry.id}: {kind} names unknown id(s) {missing}")


def cache_dir() -> Path:
    override = os.environ.get("TRAINTRIAGE_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("traintriage"))


def cache_key(files: list[Path]) -> str:
    """Which cached KB fits: names, sizes and modification times of the entry files, this
    loader (the cache's format), the schema and the scanner's own patterns (a stat per file:
    reading and hashing every entry on each start would cost more than a small diagnosis)."""
    from traintriage.kb import schema
    from traintriage.match import internal

    hasher = hashlib.sha256(__version__.encode())
    hasher.update(os.environ.get("TRAINTRIAGE_KB_SKIP_INVALID", "").encode())
    for path in [Path(__file__), Path(schema.__file__), Path(internal.__file__), *files]:
        stat = path.stat()
        hasher.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return hasher.hexdigest()[:20]


@cache
def kb_cache_key() -> str:
    """`cache_key` of the installed entries, once per process: the caches derived from the KB
    (the scanner's patterns, the similarity index) are named after it too."""
    return cache_key(entry_files())


@cache
def load_kb() -> KnowledgeBase:
    """The validated KB, from the on-disk cache when the entry files are unchanged."""
    key = kb_cache_key()
    cached = cache_dir() / f"kb-{key}.pickle"
    kb = read_cache(cached)
    if isinstance(kb, KnowledgeBase):
        return kb
    kb = load_entries()
    kb.entries = PackedEntries.pack(kb.entries)
    write_cache(cached, pickle.dumps(kb, protocol=pickle.HIGHEST_PROTOCOL))
    return kb


def read_cache(path: Path) -> object:
    """What a cache file holds, or None when it is missing or unreadable (the caller rebuilds it)."""
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def write_cache(path: Path, data: bytes) -> None:
    """Best effort: a read-only cache directory only costs speed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        prune_stale(path)
    except OSError:
        pass


STALE_AFTER_SECONDS = 14 * 24 * 3600
_CACHE_NAME = re.compile(r"[a-z]+-[0-9a-f]{16,64}(?:-\w+)?\.(?:pickle|hsdb)(?:\.\d+\.tmp)?")
"""How the caches are named: `kb-<key>.pickle`, `scanner-<digest>-<machine>.hsdb`, their temporaries."""


def prune_stale(path: Path, now: float | None = None) -> None:
    """Remove the caches of `path`'s kind (`kb-`, `scanner-`, ...) unused for two weeks. Each KB
    edit or release writes new ones under new names (a few MB each) and nothing else removes
    the old. Age is the last access or write, so another install's live cache is kept; one
    idle longer is rebuilt once when next used."""
    cutoff = (time.time() if now is None else now) - STALE_AFTER_SECONDS
    kind = path.name.split("-", 1)[0]
    for other in path.parent.glob(f"{kind}-*"):
        if not _CACHE_NAME.fullmatch(other.name):
            continue  # not ours: TRAINTRIAGE_CACHE_DIR may name a directory shared with other files
        try:
            stat = other.stat()
            if other != path and max(stat.st_atime, stat.st_mtime) < cutoff:
                other.unlink()
        except OSError:
            continue
