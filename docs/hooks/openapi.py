"""MkDocs hook: write the API's OpenAPI document before each build, so the reference pages are never stale.

The app is built on the in-memory stores (no Redis, no worker), exactly as it describes itself at `/openapi.json`.
`reference/openapi.md` renders the document; `reference/rest.md` gets its table of status codes per route from it
(the `<!-- status-codes -->` marker), so the codes a route can answer are never typed by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parents[1] / "reference" / "openapi.json"
MARKER = "<!-- status-codes -->"
METHODS = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """What the API serves at `/openapi.json`."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from api.app import create_app
    from infra.settings import Settings

    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev")
    return create_app(settings).openapi()


def status_table(document: dict[str, Any]) -> str:
    """One row per operation: its method and path, its success codes and its error codes, as the app declares them."""
    rows = ["| route | success | errors |", "|---|---|---|"]
    for path, operations in document["paths"].items():
        for method in (m for m in METHODS if m in operations):
            codes = sorted(operations[method].get("responses", {}))
            ok = ", ".join(c for c in codes if c < "400") or "none"
            errors = ", ".join(c for c in codes if c >= "400") or "none"
            rows.append(f"| `{method.upper()} {path}` | {ok} | {errors} |")
    return "\n".join(rows) + "\n"


def on_pre_build(config: Any, **_: Any) -> None:
    document = openapi_document()
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    if not SCHEMA.exists() or SCHEMA.read_text() != text:
        SCHEMA.write_text(text)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    document = json.loads(SCHEMA.read_text()) if SCHEMA.exists() else openapi_document()  # a test renders it unbuilt
    return markdown.replace(MARKER, status_table(document))
