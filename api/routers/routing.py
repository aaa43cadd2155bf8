"""The routing directives (docs/spec/directives.md), parsed by the pure parser the SDK also uses (no session, no I/O).

`{"text": "@tools a(output=variable:x), b(output=file:r/{today})"}` → `extraction.directives.syntax.parse_directives`;
`{"tools": {"a": {"output": "variable:x", "write_mode": "replace"}}}` →
`extraction.directives.specs.tool_routes_from_mapping`.
Both answer the same `RoutingSpec`; a mistake is a 422 `directive_error` naming the token and where it is
(`details.token`, `line`, `column`; `path` for the dict form).
"""

from __future__ import annotations

from fastapi import APIRouter

from api.errors import error_responses
from api.routers import API_PREFIX
from api.variable_schemas import RoutingParseRequest
from extraction.directives.specs import RoutingSpec, tool_routes_from_mapping
from extraction.directives.syntax import parse_directives

router = APIRouter(prefix=f"{API_PREFIX}/routing", tags=["routing"])


@router.post("/parse", response_model=RoutingSpec, responses=error_responses(400, 422))
def parse_routing(body: RoutingParseRequest) -> RoutingSpec:
    """The typed routing spec of directive text or of the dict form."""
    if body.text is not None:
        return parse_directives(body.text)
    return RoutingSpec(tools=tool_routes_from_mapping(body.tools or {}))
