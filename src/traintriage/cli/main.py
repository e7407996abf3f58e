"""The `traintriage` command. Thin: every sub-command calls the engine and a renderer.

Exit status (OUTPUT.md): 0 no failure, 1 failure diagnosed, 2 unknown failure, 64 and
up for usage and input errors, each with a one-line message on stderr. A user never
sees a traceback from our own code (set TRAINTRIAGE_DEBUG=1 to get one).
"""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import Annotated

import typer
from typer.exceptions import Abort, Exit, TyperException

from traintriage.errors import TraintriageError, UsageError

app = typer.Typer(
    name="traintriage",
    help="Tell why a training run died: root cause, first failed rank, collateral, fix.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
kb_app = typer.Typer(help="Browse and check the knowledge base of failure classes.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@app.command()
def diagnose(
    paths: Annotated[list[str], typer.Argument(help="Log files, directories of per-rank logs, or '-' for stdin.")],
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.text,
    no_mask: Annotated[bool, typer.Option("--no-mask", help="Do not mask secrets and personal data (local use only).")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")] = None,
) -> int:
    """Diagnose the logs of a failed (or suspect) training run."""
    from traintriage.cli.terminal import scan_progress
    from traintriage.pipeline import diagnose as run_diagnosis
    from traintriage.report.render import render_json, render_markdown

    diagnosis = run_diagnosis(paths, mask=not no_mask, jobs=jobs, progress=scan_progress)
    if output_format is OutputFormat.json:
        _write(render_json(diagnosis))
    elif output_format is OutputFormat.markdown:
        _write(render_markdown(diagnosis))
    else:
        from traintriage.cli.terminal import print_diagnosis

        print_diagnosis(diagnosis)
    for warning in diagnosis.warnings:
        print(f"traintriage: warning: {warning}", file=sys.stderr)
    return diagnosis.exit_code


@app.command()
def mask(paths: Annotated[list[str], typer.Argument(help="Log files or '-' for stdin.")]) -> int:
    """Print the log with secrets and personal data replaced; every line kept."""
    from traintriage.cli.mask_cmd import mask_command

    return mask_command(paths)


@app.command()
def diff(
    good: Annotated[str, typer.Argument(help="Log (file or directory) of a good run.")],
    bad: Annotated[str, typer.Argument(help="Log (file or directory) of the failed run.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Most lines to show.")] = 30,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.text,
    no_mask: Annotated[bool, typer.Option("--no-mask", help="Do not mask secrets (local use only).")] = False,
) -> int:
    """What the failed run logged that the good run never did, most suspicious first."""
    from traintriage.analyze.diff import diff_runs

    found = diff_runs([good], [bad], limit=limit, mask=not no_mask)
    if output_format is OutputFormat.json:
        import json

        rows = [{"kind": t.kind.value, "template": t.text, "count": t.count, "example": t.example,
                 "source": t.source, "line": t.line, "known": t.known} for t in found]
        _write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    else:
        for t in found:
            known = f" [{t.known}]" if t.known else ""
            _write(f"{t.kind.value:<12}{t.source}:{t.line} (x{t.count}){known}  {t.example.strip()[:200]}\n")
        if not found:
            _write("no lines in the failed run that the good run lacks\n")
    return 0


@kb_app.command("lint")
def kb_lint() -> int:
    """Check the KB: schema, unique ids, RE2 patterns, examples, catalog coverage."""
    from traintriage.kb.lint import lint

    report = lint()
    for error in report.errors:
        print(f"error: {error}")
    if report.catalog_ids:
        present = len(report.catalog_ids) - len(report.missing)
        print(f"catalog: {present}/{len(report.catalog_ids)} ids present"
              + (f"; missing: {', '.join(report.missing)}" if report.missing else ""))
        print(f"beyond the catalog: {len(report.extra)} entries")
    else:
        print("catalog: not found (set TRAINTRIAGE_CATALOG); coverage not checked")
    print(f"{report.entries} entries, {len(report.errors)} errors")
    return 0 if report.ok else 1


@kb_app.command("list")
def kb_list(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.text,
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
) -> int:
    """One line per entry."""
    from traintriage.kb.loader import load_kb

    entries = [e for e in load_kb().entries.values() if category is None or e.category.value == category]
    entries.sort(key=lambda e: (e.category.value, e.id))
    if output_format is OutputFormat.json:
        import json

        rows = [{"id": e.id, "title": e.title, "category": e.category.value, "severity": e.severity.value}
                for e in entries]
        _write(json.dumps(rows, indent=2) + "\n")
    else:
        _write("".join(f"{e.id:<36} {e.category.value:<12} {e.title}\n" for e in entries))
    return 0


@kb_app.command("show")
def kb_show(entry_id: Annotated[str, typer.Argument(help="Entry id, e.g. cuda-oom.")]) -> int:
    """The whole entry, as an engineer reads it."""
    from traintriage.kb.loader import load_kb
    from traintriage.kb.render import render_entry

    entry = load_kb().get(entry_id)
    if entry is None:
        raise UsageError(f"no entry '{entry_id}' (see 'traintriage kb list')")
    _write(render_entry(entry))
    return 0


@kb_app.command("search")
def kb_search(text: Annotated[list[str], typer.Argument(help="Words or an error message.")]) -> int:
    """Entries whose text or signatures match the words, best first."""
    from traintriage.kb.loader import load_kb
    from traintriage.kb.render import search_entries

    hits = search_entries(load_kb(), " ".join(text))
    _write("".join(f"{e.id:<36} {e.title}\n" for e in hits) or "no entry matches\n")
    return 0 if hits else 1


@kb_app.command("export")
def kb_export() -> int:
    """The whole KB as a JSON array of full entries."""
    import json

    from traintriage.kb.loader import load_kb
    from traintriage.plain import plain

    rows = [plain(e) for e in sorted(load_kb().entries.values(), key=lambda e: e.id)]
    _write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    return 0


def run() -> None:
    """Entry point: map every outcome to an exit status and a one-line message."""
    debug = bool(os.environ.get("TRAINTRIAGE_DEBUG"))
    try:
        result = app(standalone_mode=False)
    except Exit as exc:
        sys.exit(exc.exit_code)
    except TyperException as exc:
        print(f"traintriage: {exc.format_message()}", file=sys.stderr)
        sys.exit(64)
    except Abort:
        sys.exit(130)
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
    sys.exit(result if isinstance(result, int) else 0)


if __name__ == "__main__":
    run()
