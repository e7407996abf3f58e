"""`python -m traintriage.lsp`: the language server on stdio, like `traintriage lsp`."""

from __future__ import annotations

import sys

from traintriage.errors import TraintriageError
from traintriage.lsp.command import lsp_command

if __name__ == "__main__":
    try:
        sys.exit(lsp_command())
    except TraintriageError as exc:
        print(f"traintriage: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
