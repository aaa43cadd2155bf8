"""MkDocs hook: write the API's OpenAPI document before each build, so the reference page is never stale.

The app is built on the in-memory stores (no Redis, no worker), exactly as it describes itself at `/openapi.json`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parents[1] / "reference" / "openapi.json"


def on_pre_build(config: Any, **_: Any) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from api.app import create_app
    from infra.settings import Settings

    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev")
    document = create_app(settings).openapi()
    text = json.dumps(document, indent=1, sort_keys=True) + "\n"
    if not SCHEMA.exists() or SCHEMA.read_text() != text:
        SCHEMA.write_text(text)
