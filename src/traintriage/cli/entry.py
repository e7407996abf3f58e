"""The `traintriage` entry point: exit statuses, one-line errors, and a fast path.

Exit status (OUTPUT.md): 0 no failure, 1 failure diagnosed, 2 unknown failure, 64 and
up for usage and input errors, each with a one-line message on stderr. A user never
sees a traceback from our own code (set TRAINTRIAGE_DEBUG=1 to get one).

Fast path: importing typer costs ~45 ms, a fifth of the time an editor may spend on
`traintriage diagnose small.log` at every save. A plain `diagnose` command line (paths,
`--format/-f`, `--no-mask`, `--jobs/-j`) runs without it; anything else (help, other
commands, an option spelled otherwise or a bad value) goes to the typer app in
`cli/main.py`, which defines the options and their messages.
"""

from __future__ import annotations

import os
import sys

from traintriage.cli.diagnose_cmd import OutputFormat, diagnose_command
from traintriage.errors import TraintriageError

_FORMATS = {f.value: f for f in OutputFormat}


def plain_diagnose_args(argv: list[str]) -> tuple[list[str], OutputFormat, bool, int | None] | None:
    """(paths, format, mask, jobs) when `argv` is a plain `diagnose` call, else None."""
    if not argv or argv[0] != "diagnose":
        return None
    paths: list[str] = []
    output_format = OutputFormat.text
    mask = True
    jobs: int | None = None
    rest = iter(argv[1:])
    for arg in rest:
        name, equals, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in ("--format", "-f"):
            value = inline if equals else next(rest, "")
            if value not in _FORMATS:
                return None
            output_format = _FORMATS[value]
        elif name in ("--jobs", "-j"):
            value = inline if equals else next(rest, "")
            if not value.isdigit() or int(value) < 1:
                return None
            jobs = int(value)
        elif arg == "--no-mask":
            mask = False
        elif arg == "-" or not arg.startswith("-"):
            paths.append(arg)
        else:
            return None
    return (paths, output_format, mask, jobs) if paths else None


def _dispatch() -> int:
    plain = plain_diagnose_args(sys.argv[1:])
    if plain is not None:
        return diagnose_command(*plain)
    from traintriage.cli.main import run_typer

    return run_typer()


def run() -> None:
    """Map every outcome to an exit status and a one-line message."""
    debug = bool(os.environ.get("TRAINTRIAGE_DEBUG"))
    try:
        status = _dispatch()
    except TraintriageError as exc:
        if debug:
            raise
        print(f"traintriage: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except MemoryError:
        print("traintriage: error: out of memory", file=sys.stderr)
        sys.exit(71)
    except Exception as exc:
        if debug:
            raise
        print(f"traintriage: internal error: {type(exc).__name__}: {exc} (set TRAINTRIAGE_DEBUG=1 for details)",
              file=sys.stderr)
        sys.exit(70)
    sys.exit(status)


if __name__ == "__main__":
    run()
