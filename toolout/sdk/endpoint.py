"""Each plan becomes a method of both clients: written once, typed for each.

`endpoint(plan_fn)` is a descriptor. On a `ToolOutClient` (a `SyncTransport`) the attribute is a
function with `plan_fn`'s parameters that returns the plan's result; on an `AsyncToolOutClient`
(an `AsyncTransport`) the same function returns an awaitable of it. Its name and docstring are
`plan_fn`'s, so `help(client.store)` shows the call's documentation.

`Endpoints` lists every API call of the REST contract; the clients inherit it with their transport.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from toolout.sdk import jobs as job_calls
from toolout.sdk import outputs as output_calls
from toolout.sdk import variables as variable_calls
from toolout.sdk.cancellation import Cancellation
from toolout.sdk.driving import Transport
from toolout.sdk.plans import Plan

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


class RunsPlansAsync(Protocol):
    """What the async client is to an endpoint: its plans' results are awaited (`AsyncTransport`)."""

    async def execute(self, plan: Plan[R], *, cancel: Cancellation | None = None) -> R: ...


class RunsPlans(Protocol):
    """What the sync client is to an endpoint: its plans' results come back at once (`SyncTransport`).

    Protocols, not the transports themselves: the clients import this module, so it names neither.
    """

    def execute(self, plan: Plan[R], *, cancel: Cancellation | None = None) -> R: ...


class endpoint(Generic[P, T]):
    def __init__(self, plan: Callable[P, Plan[T]]) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> endpoint[P, T]: ...

    @overload
    def __get__(self, obj: RunsPlansAsync, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, obj: RunsPlans, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, obj: object, owner: type[Any]) -> Any:
        if obj is None:
            return self
        if not isinstance(obj, Transport):
            raise TypeError(f"{self.plan.__name__} needs a client with a transport, not {type(obj).__name__}")
        plan = self.plan
        transport = cast("RunsPlans | RunsPlansAsync", obj)  # the only two subclasses of Transport

        @functools.wraps(plan)
        def bound(*args: Any, **kwargs: Any) -> Any:
            return transport.execute(plan(*args, **kwargs))

        return bound


class Endpoints:
    """Every REST call, as methods (see `toolout.sdk.outputs`, `.jobs`, `.variables` for each one's docs)."""

    # sessions and stored outputs
    create_session = endpoint(output_calls.create_session)
    delete_session = endpoint(output_calls.delete_session)
    session = endpoint(output_calls.session)
    session_usage = endpoint(output_calls.session_usage)
    store = endpoint(output_calls.store)
    output = endpoint(output_calls.output)
    output_usage = endpoint(output_calls.output_usage)
    delete_output = endpoint(output_calls.delete_output)
    content = endpoint(output_calls.content)
    read = endpoint(output_calls.read)
    grep = endpoint(output_calls.grep)
    # extraction jobs
    submit = endpoint(job_calls.submit)
    estimate = endpoint(job_calls.estimate)
    job = endpoint(job_calls.job)
    session_jobs = endpoint(job_calls.session_jobs)
    trace = endpoint(job_calls.trace)
    cancel = endpoint(job_calls.cancel)
    wait = endpoint(job_calls.wait)
    tool_output = endpoint(job_calls.tool_output)
    webhook_secret = endpoint(job_calls.webhook_secret)
    # variables, files, output routing, buffer_ops
    variables = endpoint(variable_calls.variables)
    variable = endpoint(variable_calls.variable)
    resolve = endpoint(variable_calls.resolve)
    instructions = endpoint(variable_calls.instructions)
    files = endpoint(variable_calls.files)
    parse_routing = endpoint(variable_calls.parse_routing)
    buffer_ops = endpoint(variable_calls.buffer_ops)
    peek_variable = endpoint(variable_calls.peek_variable)
    read_variable = endpoint(variable_calls.read_variable)
    search_variables = endpoint(variable_calls.search_variables)
    export_variable = endpoint(variable_calls.export_variable)
