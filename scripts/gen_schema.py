"""Regenerate the JSON Schema of the diagnosis contract shipped in the package."""

from __future__ import annotations

import json
import sys

from traintriage.report.model import SCHEMA_PATH, diagnosis_json_schema

if __name__ == "__main__":
    text = json.dumps(diagnosis_json_schema(), indent=2, sort_keys=True) + "\n"
    if "--check" in sys.argv:
        sys.exit(0 if SCHEMA_PATH.read_text() == text else 1)
    SCHEMA_PATH.write_text(text)
