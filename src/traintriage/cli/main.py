"""The `traintriage` commands (typer). Thin: every sub-command calls the engine and a renderer.

The entry point, its exit statuses and its fast path for plain `diagnose` calls are in
`cli/entry.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import Abort, Exit, TyperException

from traintriage.cli.diagnose_cmd import OutputFormat, diagnose_command, write
from traintriage.errors import UsageError

app = typer.Typer(
    name="traintriage",
    help="Tell why a training run died: root cause, first failed rank, collateral, fix.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
kb_app = typer.Typer(help="Browse and check the knowledge base of failure classes.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")
from traintriage.cli.admin_cmd import admin_app  # noqa: E402 (registered beside kb)

app.add_typer(admin_app, name="admin")


@app.command()
def diagnose(
    paths: Annotated[list[str], typer.Argument(help="Log files, directories of per-rank logs, or '-' for stdin.")],
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.text,
    no_mask: Annotated[bool, typer.Option("--no-mask", help="Do not mask secrets and personal data (local use only).")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: all cores).")] = None,
) -> int:
    """Diagnose the logs of a failed (or suspect) training run."""
    return diagnose_command(paths, output_format, not no_mask, jobs)


@app.command()
def mask(
    paths: Annotated[list[str] | None, typer.Argument(help="Log files or '-' for stdin (the default).")] = None,
) -> int:
    """Print the log with secrets and personal data replaced; every line kept."""
    from traintriage.cli.mask_cmd import mask_command

    return mask_command(paths or [])


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

    warnings: list[str] = []
    found = diff_runs([good], [bad], limit=limit, mask=not no_mask, warnings=warnings)
    if output_format is OutputFormat.json:
        import json

        rows = [{"kind": t.kind.value, "template": t.text, "count": t.count, "example": t.example,
                 "source": t.source, "line": t.line, "known": t.known} for t in found]
        write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
    else:
        for t in found:
            known = f" [{t.known}]" if t.known else ""
            write(f"{t.kind.value:<12}{t.source}:{t.line} (x{t.count}){known}  {t.example.strip()[:200]}\n")
        if not found:
            write("no lines in the failed run that the good run lacks\n")
    for warning in warnings:
        print(f"traintriage: warning: {warning}", file=sys.stderr)
    return 0


@kb_app.command("lint")
def kb_lint() -> int:
    """Check the KB: schema, unique ids, RE2 patterns, examples, catalog coverage."""
    from traintriage.kb.lint import lint

    report = lint()
    for error in report.errors:
        print(f"error: {error}")
    for warning in report.warnings:
        print(f"warning: {warning}")
    if report.catalog_ids:
        present = len(report.catalog_ids) - len(report.missing)
        print(f"catalog: {present}/{len(report.catalog_ids)} ids present"
              + (f"; missing: {', '.join(report.missing)}" if report.missing else ""))
        print(f"beyond the catalog: {len(report.extra)} entries")
    else:
        print("catalog: not found (set TRAINTRIAGE_CATALOG); coverage not checked")
    print(f"{report.entries} entries, {len(report.errors)} errors, {len(report.warnings)} review warnings")
    return 0 if report.ok else 1


@kb_app.command("list")
def kb_list(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f")] = OutputFormat.text,
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
) -> int:
    """One line per entry."""
    from traintriage.kb.loader import load_kb
    from traintriage.kb.schema import Category

    valid = sorted(c.value for c in Category)
    if category is not None and category not in valid:
        raise UsageError(f"unknown category '{category}'; valid categories: {', '.join(valid)}")
    entries = [e for e in load_kb().entries.values() if category is None or e.category.value == category]
    entries.sort(key=lambda e: (e.category.value, e.id))
    if output_format is OutputFormat.json:
        import json

        rows = [{"id": e.id, "title": e.title, "category": e.category.value, "severity": e.severity.value}
                for e in entries]
        write(json.dumps(rows, indent=2) + "\n")
    else:
        write("".join(f"{e.id:<36} {e.category.value:<12} {e.title}\n" for e in entries))
    return 0


@kb_app.command("show")
def kb_show(entry_id: Annotated[str, typer.Argument(help="Entry id, e.g. cuda-oom.")]) -> int:
    """The whole entry, as an engineer reads it."""
    from traintriage.kb.loader import load_kb
    from traintriage.kb.render import render_entry

    entry = load_kb().get(entry_id)
    if entry is None:
        raise UsageError(f"no entry '{entry_id}' (see 'traintriage kb list')")
    write(render_entry(entry))
    return 0


@kb_app.command("search")
def kb_search(text: Annotated[list[str], typer.Argument(help="Words or an error message.")]) -> int:
    """Entries whose text or signatures match the words, best first."""
    from traintriage.kb.loader import load_kb
    from traintriage.kb.render import search_entries

    hits = search_entries(load_kb(), " ".join(text))
    write("".join(f"{e.id:<36} {e.title}\n" for e in hits) or "no entry matches\n")
    return 0 if hits else 1


@kb_app.command("export")
def kb_export() -> int:
    """The whole KB as a JSON array of full entries."""
    import json

    from traintriage.kb.loader import load_kb
    from traintriage.plain import plain

    rows = [plain(e) for e in sorted(load_kb().entries.values(), key=lambda e: e.id)]
    write(json.dumps(rows, indent=2, ensure_ascii=False, default=str) + "\n")  # dates as ISO text
    return 0


site_app = typer.Typer(help="The failure encyclopedia as a static web site.", no_args_is_help=True)
app.add_typer(site_app, name="site")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
) -> int:
    """Run the web app and HTTP API (needs the serve extra)."""
    from traintriage.cli.serve_cmd import serve_command

    return serve_command(host, port, workers)


@app.command()
def lsp() -> int:
    """Run the language server for editors on stdin/stdout (needs the lsp extra)."""
    from traintriage.lsp.command import lsp_command

    return lsp_command()


@site_app.command("build")
def site_build(out: Annotated[Path, typer.Argument(help="Output folder.")]) -> int:
    """Write the encyclopedia as static files (relative links, search index as JSON)."""
    from traintriage.cli.serve_cmd import site_build_command

    return site_build_command(out)


def run_typer() -> int:
    """Run the typer app; its own usage errors become exit 64 with typer's one-line message."""
    try:
        result = app(standalone_mode=False)
    except Exit as exc:
        return exc.exit_code
    except TyperException as exc:
        message = exc.format_message()
        if message:  # empty when a bare command printed its help instead (no_args_is_help)
            print(f"traintriage: {message}", file=sys.stderr)
        return 64
    except Abort:
        return 130
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    from traintriage.cli.entry import run

    run()
