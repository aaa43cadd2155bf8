"""The rest of the upstream behind `toolout mcp-proxy`: its resources and prompts, with toolout's outputs.

A gateway that only carried tools would hide what else the upstream offers, and the `resource_link`
of a replaced result would point nowhere. So:

* `resources/list`: the upstream's page as it is; the first page also lists the proxy session's
  stored outputs (`toolout.mcp.resources.list_outputs`);
* `resources/templates/list`: the upstream's, then toolout's (`toolout://outputs/{handle}`, ...);
* `resources/read`: a `toolout://outputs/...` URI is read from the service (a window of its text),
  and so is `toolout://sessions/{id}` (`toolout.mcp.resources.read_resource`); any other URI is the upstream's;
* `prompts/list`, `prompts/get`: the upstream's, forwarded.

An upstream without resources or prompts answers METHOD_NOT_FOUND to a list; the list is then empty.
Results lose only the upstream's `serverInfo` stamp (`toolout.mcp.results.unstamped`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from mcp import types
from mcp.shared.exceptions import MCPError

from toolout.client import AsyncToolOutClient, ToolOutAPIError, UnavailableError
from toolout.mcp import OUTPUT_URI_PREFIX, SESSION_URI_PREFIX
from toolout.mcp.resources import BadResourceURI, list_outputs, resource_templates
from toolout.mcp.resources import read_resource as read_toolout_resource
from toolout.mcp.results import unstamped
from toolout.mcp.upstream import Upstream

R = TypeVar("R", bound=types.Result)
T = TypeVar("T")
RESOURCE_NOT_FOUND = -32002


async def _or_empty(work: Awaitable[R], empty: R) -> R:
    """The upstream's list, or `empty` when the upstream does not offer that kind of thing."""
    try:
        return unstamped(await work)
    except MCPError as exc:
        if exc.code == types.METHOD_NOT_FOUND:
            return empty
        raise


async def list_resources(
    upstream: Upstream, client: AsyncToolOutClient, session: str | None, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    request = types.ListResourcesRequest(params=params)
    page = await _or_empty(
        upstream.request("listing its resources", request, types.ListResourcesResult),
        types.ListResourcesResult(resources=[]),
    )
    if params is not None and params.cursor:
        return page
    ours = await service_call("listing the session's outputs", list_outputs(client, session))
    return page.model_copy(update={"resources": [*page.resources, *ours]})


async def list_resource_templates(
    upstream: Upstream, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    request = types.ListResourceTemplatesRequest(params=params)
    page = await _or_empty(
        upstream.request("listing its resource templates", request, types.ListResourceTemplatesResult),
        types.ListResourceTemplatesResult(resource_templates=[]),
    )
    if params is not None and params.cursor:
        return page
    return page.model_copy(update={"resource_templates": [*page.resource_templates, *resource_templates()]})


async def read_resource(
    upstream: Upstream, client: AsyncToolOutClient, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    if not str(params.uri).startswith((OUTPUT_URI_PREFIX, SESSION_URI_PREFIX)):
        request = types.ReadResourceRequest(params=params)
        return unstamped(await upstream.request(f"reading {params.uri}", request, types.ReadResourceResult))
    try:
        return await service_call(f"reading {params.uri}", read_toolout_resource(client, str(params.uri)))
    except BadResourceURI as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from exc
    except ToolOutAPIError as exc:
        code = RESOURCE_NOT_FOUND if exc.status == 404 else types.INVALID_PARAMS
        raise MCPError(code, exc.message, {"code": exc.code}) from exc


async def list_prompts(upstream: Upstream, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    request = types.ListPromptsRequest(params=params)
    return await _or_empty(
        upstream.request("listing its prompts", request, types.ListPromptsResult), types.ListPromptsResult(prompts=[])
    )


async def get_prompt(upstream: Upstream, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    request = types.GetPromptRequest(params=params)
    return unstamped(await upstream.request(f"getting prompt {params.name}", request, types.GetPromptResult))


class ToolOutUnavailable(MCPError):
    """The toolout service failed (5xx) or could not be reached: INTERNAL_ERROR, naming what was being done."""


async def service_call(what: str, work: Awaitable[T]) -> T:
    """`work` on the service: a 5xx or an unreachable service is `ToolOutUnavailable`; a 4xx propagates."""
    try:
        return await work
    except UnavailableError as exc:
        raise unavailable(what, exc) from exc


def unavailable(what: str, exc: ToolOutAPIError) -> ToolOutUnavailable:
    detail = exc.message
    return ToolOutUnavailable(types.INTERNAL_ERROR, f"the toolout service is unavailable ({what}): {detail}")
