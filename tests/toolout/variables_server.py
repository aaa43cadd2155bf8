"""Whether an API serves the variables routes; end-to-end toolkit tests skip, naming what is missing.

The toolkit's client side was built against the REST contract while the server side was built on
another branch (`vars-server`). Its end-to-end tests are written against the real routes; on an
API without them they skip with the list of missing routes (never silently pass).
"""

from __future__ import annotations

import httpx
import pytest

CONTRACT_ROUTES = [
    ("post", "/v1/sessions/{session_id}/resolve"),
    ("get", "/v1/sessions/{session_id}/instructions"),
    ("get", "/v1/sessions/{session_id}/variables"),
    ("post", "/v1/sessions/{session_id}/buffer_ops"),
]


def missing_variable_routes(api_url: str) -> list[str]:
    """The contract routes the API's OpenAPI document does not list (path parameters may be named otherwise)."""
    paths = httpx.get(f"{api_url}/openapi.json", timeout=30).json().get("paths", {})
    shapes = {_shape(path): {method.lower() for method in ops} for path, ops in paths.items()}
    return [f"{m.upper()} {p}" for m, p in CONTRACT_ROUTES if m not in shapes.get(_shape(p), set())]


def _shape(path: str) -> str:
    return "/".join("{}" if part.startswith("{") else part for part in path.split("/"))


def require_variable_routes(api_url: str) -> None:
    missing = missing_variable_routes(api_url)
    if missing:
        pytest.skip(f"the variables server is not on this branch yet: the API lacks {', '.join(missing)}")
