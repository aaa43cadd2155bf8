"""A stage's model with its fallbacks: litellm's Router tries them in order, each call paced under its own limits.

`TOOLOUT_<STAGE>_FALLBACKS` lists the models a stage falls back to when its model still fails after its
retries with a rate limit, a server error (5xx), a timeout, or a prompt over its context window
(`context_window_fallbacks`). Each model is one deployment of its own model group (`<stage>-<i>`), so the
Router's fallback chain is exactly the operator's order. Before each attempt the Router calls its pre-call
checks; `_PaceHook` is one, which paces the attempt under that deployment's model limits (`Pacer`) and
notes which model it tried, so the reply says which model answered and the gate records a fallback.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from extraction.protocols import LLMReply, Message
from infra.llm.client import _litellm, require_retry_support, to_reply, translate_error
from infra.llm.ratelimit.pacing import CALL, CallScope, Pacer, call_scope

if TYPE_CHECKING:
    from infra.settings import Settings

_HOOK_LOCK = threading.Lock()


@dataclass(frozen=True)
class Endpoint:
    model: str
    api_base: str | None
    api_key: str | None = field(repr=False)


class RouterClient:
    """An `LLM` over an ordered list of models: the first answers unless it fails, then the next, and so on."""

    def __init__(
        self, stage: str, endpoints: list[Endpoint], *, timeout: float, num_retries: int, pacer: Pacer | None
    ) -> None:
        require_retry_support(num_retries)
        self.stage = stage
        self.endpoints = endpoints
        self.model = endpoints[0].model
        self.timeout = timeout
        self.num_retries = num_retries
        self.pacer = pacer

    def __repr__(self) -> str:
        return f"RouterClient(stage={self.stage!r}, models={[e.model for e in self.endpoints]!r})"

    def warm_up(self) -> None:
        _ = self._router

    def complete(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None, max_tokens: int | None = None
    ) -> LLMReply:
        scope = CALL.get() or CallScope()
        scope.pace = self.pacer.pace if self.pacer is not None else None
        tried = len(scope.attempted)
        request: dict[str, Any] = {"messages": messages, "timeout": self.timeout}
        request.update({k: v for k, v in {"tools": tools, "max_tokens": max_tokens}.items() if v is not None})
        if tools:
            request["_skip_mcp_handler"] = True  # see infra.llm.client.SKIP_MCP
        with call_scope(scope):
            try:
                response = self._router.completion(model=self._group(0), **request)
            except Exception as exc:
                mapped = translate_error(exc, self.model)
                if mapped is None:
                    raise
                raise mapped from exc
        answered = scope.attempted[-1] if len(scope.attempted) > tried else self.model
        return to_reply(response, answered)

    def _group(self, index: int) -> str:
        return f"{self.stage}-{index}"

    @cached_property
    def _router(self) -> Any:
        litellm = _litellm()
        install_pace_hook(litellm)
        deployments = [
            {"model_name": self._group(i), "litellm_params": _params(endpoint)}
            for i, endpoint in enumerate(self.endpoints)
        ]
        chain = {self._group(0): [self._group(i) for i in range(1, len(self.endpoints))]}
        return litellm.Router(
            model_list=deployments,
            fallbacks=[chain],
            context_window_fallbacks=[chain],
            num_retries=self.num_retries,
            retry_after=0,
            timeout=self.timeout,
        )


def _params(endpoint: Endpoint) -> dict[str, Any]:
    params = {"model": endpoint.model, "api_base": endpoint.api_base, "api_key": endpoint.api_key}
    return {k: v for k, v in params.items() if v is not None}


def install_pace_hook(litellm: Any) -> None:
    """Register the pre-call hook once per process (litellm's callbacks are global)."""
    from litellm.integrations.custom_logger import CustomLogger

    class PaceHook(CustomLogger):
        """Before each deployment the Router tries: pace it under its model's limits, note the model."""

        def pre_call_check(self, deployment: dict[str, Any]) -> dict[str, Any] | None:
            _pace(deployment)
            return None

        async def async_pre_call_check(
            self, deployment: dict[str, Any], parent_otel_span: Any
        ) -> dict[str, Any] | None:
            _pace(deployment)  # blocks this thread's private loop (Router's sync path): as a sync call would
            return None

    with _HOOK_LOCK:
        if not any(type(c).__name__ == "PaceHook" for c in litellm.callbacks):
            litellm.callbacks.append(PaceHook())


def _pace(deployment: dict[str, Any]) -> None:
    scope = CALL.get()
    model = str(deployment.get("litellm_params", {}).get("model", ""))
    if scope is None:
        return
    if scope.pace is not None:
        scope.pace(model)
    else:
        scope.attempted.append(model)


def router_client(settings: Settings, stage: str, models: list[str], *, pacer: Pacer | None) -> RouterClient:
    """The stage's client over `models` (its model, then its fallbacks), each at its own endpoint."""
    endpoints = []
    for model in models:
        config = settings.model_config_for(model)
        endpoints.append(Endpoint(model, config.api_base, config.api_key))
    return RouterClient(
        stage, endpoints, timeout=settings.model_timeout_seconds, num_retries=settings.model_num_retries, pacer=pacer
    )
