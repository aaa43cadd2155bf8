"""Per-tool output routes for a toolkit, from `@tools` directive text (docs/spec/directives.md) or from a dict.

    routes="@tools search(output=variable:search), report(output=file:reports/{today}.md, write-mode=new)"
    routes="search(output=variable:search)"            # the same without the `@tools` keyword
    routes={"search": {"output": "variable:search", "write_mode": "replace"}, "fetch": "discard"}

Parsed by the pure parsers (`extraction.directives.syntax.parse_directives`,
`extraction.directives.specs.tool_routes_from_mapping`), so a route means what it means on the
service. A route for a tool the toolkit does not have is a `ToolDefinitionError` (a typo would
otherwise silently leave that tool inline); `@input` directives are not a toolkit's business.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from extraction.directives.specs import OutputRoute, tool_routes_from_mapping
from extraction.directives.syntax import parse_directives
from toolout.toolkit.errors import ToolDefinitionError

Routes = str | Mapping[str, Any] | None
_DIRECTIVE = re.compile(r"^[ \t]*@(tools|input)\b", re.MULTILINE)


def parse_routes(routes: Routes, tool_names: Iterable[str] | None) -> dict[str, OutputRoute | None]:
    """`tool name -> route` (None: no `output=` given, the output stays inline). `tool_names` None: the
    tools are not known in advance (an agent framework's, `toolout.integrations`), so names are not checked."""
    if routes is None:
        return {}
    if isinstance(routes, str):
        text = routes if _DIRECTIVE.search(routes) else f"@tools {routes}"
        spec = parse_directives(text)
        if spec.inputs:
            raise ToolDefinitionError("a toolkit's routes are @tools directives; @input has no meaning here")
        parsed = spec.tools
    else:
        parsed = tool_routes_from_mapping(routes)
    if tool_names is None:
        return parsed
    known = set(tool_names)
    unknown = sorted(set(parsed) - known)
    if unknown:
        raise ToolDefinitionError(f"routes name unknown tool(s) {unknown}; the toolkit has {sorted(known)}")
    return parsed
