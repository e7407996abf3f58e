"""The API's OpenAPI document, with the diagnosis contract (OUTPUT.md's JSON Schema) in it.

The schema's `$defs` become components (their `$ref`s rewritten to point there); an answer
of the API is that Diagnosis plus `id` and `url`.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

DIAGNOSIS_REF = {"$ref": "#/components/schemas/DiagnosisWithLink"}


def diagnosis_components() -> dict[str, Any]:
    from traintriage.report.model import diagnosis_json_schema

    schema = diagnosis_json_schema()
    defs = schema.pop("$defs", {})
    assert isinstance(defs, dict)
    schema.pop("$id", None)
    text = json.dumps({**defs, "Diagnosis": schema}).replace('"#/$defs/', '"#/components/schemas/')
    components: dict[str, Any] = json.loads(text)
    # The contract forbids other properties, so the API's answer is its own copy with two more.
    answer = json.loads(json.dumps(components["Diagnosis"]))
    answer["title"] = "Diagnosis with its id and url"
    answer["properties"]["id"] = {"type": "string", "description": "The stored result's unguessable id"}
    answer["properties"]["url"] = {"type": "string", "description": "The result page"}
    answer["required"] = [*answer.get("required", []), "id", "url"]
    components["DiagnosisWithLink"] = answer
    return components


def install(app: FastAPI) -> None:
    """Replace `app.openapi` by one that adds the diagnosis components (built once)."""
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            document.setdefault("components", {}).setdefault("schemas", {}).update(diagnosis_components())
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
