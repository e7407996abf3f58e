"""`traintriage lsp`: the diagnosis of a log open in an editor, over the Language Server Protocol.

The document's text goes through the same pipeline as the CLI and the web app (masked at
ingest); its root cause and collateral lines become editor diagnostics, and hovering one
shows the report's own words and fix. Needs the `lsp` extra (pygls).
"""
