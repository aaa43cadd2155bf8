"""Griffe extension: the SDK clients' REST calls rendered as the methods they are.

`toolout.sdk.endpoint.Endpoints` declares each call as `store = endpoint(output_calls.store)`: a descriptor
that, on a client, is a function with the plan's parameters returning the plan's result (awaitable on the async
client). Read statically that is an attribute with no signature or docstring. This extension gives each client
class a method per endpoint instead — the plan function's parameters and docstring, its `Plan[T]` return shown
as `T`, and the `async` label on `AsyncToolOutClient` — so the reference shows what a user calls.
"""

from __future__ import annotations

from typing import Any

import griffe

CLIENTS = {"toolout.sdk.sync_client.ToolOutClient": False, "toolout.sdk.async_client.AsyncToolOutClient": True}
ENDPOINTS = "toolout.sdk.endpoint.Endpoints"


class EndpointMethods(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **_: Any) -> None:
        if pkg.name != "toolout":
            return
        endpoints = pkg[ENDPOINTS.removeprefix("toolout.")]
        methods = {name: _plan(endpoints, attribute) for name, attribute in endpoints.members.items()}
        found = {name: plan for name, plan in methods.items() if plan is not None}
        for path, is_async in CLIENTS.items():
            client = pkg[path.removeprefix("toolout.")]
            for name, plan in found.items():
                client.set_member(name, _method(name, plan, is_async=is_async))


def _plan(endpoints: griffe.Object | griffe.Alias, attribute: griffe.Object | griffe.Alias) -> griffe.Function | None:
    """The plan function behind `name = endpoint(module_alias.function)`, or None for any other member."""
    value = getattr(attribute, "value", None)
    if not isinstance(value, griffe.ExprCall) or str(value.function) != "endpoint" or len(value.arguments) != 1:
        return None
    module_alias, _, function = str(value.arguments[0]).partition(".")
    module = endpoints.module.members[module_alias]
    target = module.target if isinstance(module, griffe.Alias) else module
    plan = target.members[function]
    return plan.target if isinstance(plan, griffe.Alias) else plan  # type: ignore[return-value]


def _method(name: str, plan: griffe.Function, *, is_async: bool) -> griffe.Function:
    returns = plan.returns
    if isinstance(returns, griffe.ExprSubscript) and str(returns.left) == "Plan":
        returns = returns.slice
    method = griffe.Function(
        name,
        lineno=plan.lineno,
        endlineno=plan.endlineno,
        parameters=griffe.Parameters(*plan.parameters),
        returns=returns,
        docstring=plan.docstring,
    )
    method.labels |= {"async"} if is_async else set()
    return method
