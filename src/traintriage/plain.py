"""Dataclasses, enums, lists and dicts to JSON-ready values, without pydantic at run time."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from enum import Enum


def plain(value: object) -> object:
    """JSON-ready data: dataclasses become dicts (field order kept), enums their values."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    return value
