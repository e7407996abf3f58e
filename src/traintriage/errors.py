"""One exception tree for the whole package; the CLI maps each to an exit code."""

from __future__ import annotations


class TraintriageError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 70


class UsageError(TraintriageError):
    """The command line asks for something impossible (no inputs, bad option)."""

    exit_code = 64


class InputError(TraintriageError):
    """An input cannot be read as a log: missing, unreadable, binary, corrupt archive."""

    exit_code = 66


class BinaryInputError(InputError):
    """The input looks like a binary file, not text."""

    exit_code = 65


class KnowledgeBaseError(TraintriageError):
    """The knowledge base does not load or does not validate."""

    exit_code = 78
