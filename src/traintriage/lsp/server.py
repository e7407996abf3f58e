"""The pygls server: diagnose a document when it is opened or saved, publish its root cause
and collateral lines, answer hovers on them.

Diagnosis runs on one worker thread, in the order the documents came, so the server keeps
reading the editor's messages meanwhile; a hover before the first diagnosis finds nothing.
Edits are not diagnosed (a big log at every keystroke): lines they move are right again
after the next save.
Every error becomes one `window/logMessage` line and no diagnostics, never a traceback.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from traintriage import __version__
from traintriage.errors import TraintriageError
from traintriage.lsp.diagnosing import diagnose_text, source_name
from traintriage.lsp.editor import EditorReport, place_report
from traintriage.lsp.positions import unit_counter


def create_server() -> LanguageServer:
    server = LanguageServer("traintriage", __version__)
    reports: dict[str, EditorReport] = {}
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="traintriage-diagnose")

    def log(message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def publish(uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    async def refresh(uri: str) -> None:
        document = server.workspace.get_text_document(uri)
        text, version, name = document.source, document.version, source_name(uri)
        units = unit_counter(server.workspace.position_encoding)
        try:
            report = await asyncio.get_running_loop().run_in_executor(worker, diagnose_text, name, text)
            placed = place_report(report, text, units)
        except TraintriageError as exc:
            reports.pop(uri, None)
            log(f"traintriage: {exc}")
            publish(uri, [], version)
            return
        except Exception as exc:  # a bug of ours must not take the editor's server down
            reports.pop(uri, None)
            log(f"traintriage: internal error diagnosing {name}: {type(exc).__name__}: {exc}",
                types.MessageType.Error)
            publish(uri, [], version)
            return
        reports[uri] = placed
        for warning in report.diagnosis.warnings:
            log(f"traintriage: {warning}")  # each names its source
        publish(uri, placed.diagnostics, version)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(params: types.DidOpenTextDocumentParams) -> None:
        await refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(params: types.DidSaveTextDocumentParams) -> None:
        await refresh(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        reports.pop(params.text_document.uri, None)
        publish(params.text_document.uri, [], None)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        placed = reports.get(params.text_document.uri)
        return placed.hover(params.position.line) if placed is not None else None

    return server
