"""A real LSP client (pygls' LanguageClient) talking to `traintriage lsp` over stdio."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import TracebackType

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TOOL = Path(sys.executable).with_name("traintriage")
WAIT_SECONDS = 180  # the first start may compile the KB into the test cache


class Session:
    """`async with Session() as lsp:` starts the server, initializes it, and shuts it down."""

    def __init__(self) -> None:
        self.client = LanguageClient("traintriage-tests", "1")
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.logs: list[str] = []
        self._news = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self._news.set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            self.logs.append(params.message)
            self._news.set()

    async def __aenter__(self) -> Session:
        await self.client.start_io(str(TOOL), "lsp")
        await self.client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    async def open(self, uri: str, text: str, language_id: str = "log") -> list[types.Diagnostic]:
        """Open a document and wait for the diagnostics the server publishes for it."""
        before = len(self.published.get(uri, []))
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))
        await asyncio.wait_for(self._published_after(uri, before), WAIT_SECONDS)
        return list(self.published[uri][-1].diagnostics)

    async def _published_after(self, uri: str, before: int) -> None:
        while len(self.published.get(uri, [])) == before:
            self._news.clear()
            await self._news.wait()

    async def hover(self, uri: str, line: int, character: int = 3) -> types.Hover | None:
        return await self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
