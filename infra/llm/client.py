"""The engine's `LLM` protocol implemented with litellm, plus model limits from litellm's model map.

Every model call in toolout goes through `LiteLLMClient.complete`, so this is the one seam where
litellm's exceptions become toolout's error tree (retryable or not) and its responses become
`LLMReply`. litellm is imported lazily: its import costs seconds and must not happen at module
import time in the API or the CLI. Retrying is litellm's job (`num_retries`); there is no loop here.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from extraction.protocols import LLMReply, Message, ToolCall, Usage
from infra.errors import LLMCallError, LLMRateLimited, LLMTimeout
from infra.llm.ratelimit.pacing import CALL

if TYPE_CHECKING:
    from infra.llm.hedging import Hedger, HedgeTicket
    from infra.llm.ratelimit.pacing import Pacer
    from infra.settings import Settings

SKIP_MCP = """Our tools are plain functions, never litellm MCP-gateway tools. Without this flag litellm
1.106 imports its MCP gateway for any request with tools, which needs the `mcp` package (not a
litellm dependency), and every tool-calling request fails with ModuleNotFoundError. litellm sets
the same flag on its own internal calls; it is popped before anything reaches the provider."""

WARM_UP_TIMEOUT_SECONDS = 30.0
"""How long the hedged path's mocked warm-up call may take (it sends nothing: seconds of imports at most)."""
HEDGED_PATH_MODULES = ("litellm._service_logger", "anyio._backends._asyncio")
"""What an async call imports past a mocked one: litellm's service logger (its OpenAI path's first real request),
and anyio's asyncio backend (httpx's, once a copy is cancelled). Found by the soak's late-import report."""
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=1)
def _litellm() -> Any:
    """Import litellm once, offline (local cost map) and without its feedback banners."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    quiet_litellm_logger()
    return litellm


def quiet_litellm_logger() -> None:
    """Keep litellm's per-call INFO lines out of worker logs, unless LITELLM_LOG asks for them.

    litellm's "LiteLLM" logger has no level of its own, so under a Celery worker at INFO it logs
    two lines per call, each twice (its own stderr handler, which Celery re-logs, and the root
    handler): noise in the logs and formatting work on every model call.
    """
    if "LITELLM_LOG" not in os.environ:
        logging.getLogger("LiteLLM").setLevel(logging.WARNING)


def require_retry_support(num_retries: int) -> None:
    """Fail at construction, not at the first outage: litellm retries with `tenacity`, which it does not install.

    Without it, litellm turns every provider error into a bare `Exception("tenacity import failed")`
    once its first round of retries is spent, and the real error is lost.
    """
    if num_retries > 0 and importlib.util.find_spec("tenacity") is None:
        raise RuntimeError(
            "num_retries > 0 needs the 'tenacity' package (litellm retries with it): install it or use num_retries=0"
        )


class LiteLLMClient:
    """An `LLM` backed by `litellm.completion`; construct one per model configuration."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        num_retries: int = 2,
        extra_headers: dict[str, str] | None = None,
        pacer: Pacer | None = None,
        hedger: Hedger | None = None,
    ) -> None:
        require_retry_support(num_retries)
        self.pacer = pacer
        self.hedger = hedger
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.num_retries = num_retries
        self.extra_headers = dict(extra_headers or {})

    def __repr__(self) -> str:  # never shows the key
        return (
            f"LiteLLMClient(model={self.model!r}, api_base={self.api_base!r}, timeout={self.timeout}, "
            f"num_retries={self.num_retries})"
        )

    def warm_up(self) -> None:
        """Import litellm now (seconds), and run one mocked completion through this client's request (no
        request leaves the process: `mock_response`), so the first real call pays for neither: litellm sets
        up its provider path lazily on the first call, which can cost the first query job its whole
        budget. A warm-up that fails only leaves that cost to the first call."""
        litellm = _litellm()
        request = self._request([{"role": "user", "content": "warm-up"}], None, 1)
        try:
            litellm.completion(**request, mock_response="ok")
            # The OpenAI SDK litellm calls imports its resource classes (many pydantic models) on a client's first
            # `.chat`, which the mocked call stops short of: imported here, a real first call pays only for itself.
            importlib.import_module("openai.resources")
            if self.hedger is not None:
                self._warm_hedged(litellm, self.hedger, request)
        except Exception as exc:  # noqa: BLE001 - never fail a worker's start for a warm-up
            logging.getLogger("toolout.llm").debug("litellm warm-up call failed: %s", exc)

    def _warm_hedged(self, litellm: Any, hedger: Hedger, request: dict[str, Any]) -> None:
        """A hedged call goes through `acompletion` on the hedger's loop, which imports its own modules on first
        use (litellm's async path; anyio's asyncio backend once httpx cancels a copy): imported now, or hours
        later a first hedge pays for them and steps the worker's RSS up (`infra.process.late_imports`)."""
        hedger.submit(litellm.acompletion(**request, mock_response="ok")).result(timeout=WARM_UP_TIMEOUT_SECONDS)
        for module in HEDGED_PATH_MODULES:
            importlib.import_module(module)

    def complete(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> LLMReply:
        """One chat completion, paced under the model's provider limits; provider failures surface as
        `LLMCallError` and its children. A call whose gate hands it a hedge ticket (`CallScope.hedge`) is
        raced against hedges when this client has a `hedger` (`infra.llm.hedging`)."""
        litellm = _litellm()
        self._pace()
        scope = CALL.get()
        if self.hedger is not None and scope is not None and scope.hedge is not None:
            return self._hedged(self.hedger, scope.hedge, self._request(messages, tools, max_tokens))
        try:
            response = litellm.completion(**self._request(messages, tools, max_tokens))
        except Exception as exc:
            mapped = translate_error(exc, self.model)
            if mapped is None:
                raise
            raise mapped from exc
        return to_reply(response, self.model)

    def _pace(self) -> None:
        if self.pacer is not None:
            self.pacer.pace(self.model)

    def _hedged(self, hedger: Hedger, ticket: HedgeTicket, request: dict[str, Any]) -> LLMReply:
        """The call as a race of `litellm.acompletion` copies (cancellable; see `infra.llm.hedging.race`)."""

        async def attempt() -> LLMReply:
            try:
                response = await _litellm().acompletion(**request)
            except Exception as exc:
                mapped = translate_error(exc, self.model)
                if mapped is None:
                    raise
                raise mapped from exc
            return to_reply(response, self.model)

        return hedger.run(self.model, ticket, attempt, before_hedge=self._pace)

    def _request(
        self, messages: list[Message], tools: list[dict[str, Any]] | None, max_tokens: int | None
    ) -> dict[str, Any]:
        """litellm keyword arguments; optional ones are left out rather than sent as None."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": self.timeout,
            "num_retries": self.num_retries,
        }
        optional = {"tools": tools, "max_tokens": max_tokens, "api_base": self.api_base, "api_key": self._api_key}
        request.update({k: v for k, v in optional.items() if v is not None})
        if tools:
            request["_skip_mcp_handler"] = True  # see SKIP_MCP below
        if self.extra_headers:
            request["extra_headers"] = self.extra_headers
        return request


def to_reply(response: Any, model: str) -> LLMReply:
    """litellm's ModelResponse as an `LLMReply` (content, parsed tool calls, usage with cost)."""
    message = response.choices[0].message
    calls = [
        ToolCall(id=c.id or f"call_{i}", name=c.function.name, arguments=utf8_safe(c.function.arguments or "{}"))
        for i, c in enumerate(getattr(message, "tool_calls", None) or [])
    ]
    content = None if message.content is None else utf8_safe(message.content)
    return LLMReply(content=content, tool_calls=calls, usage=usage_of(response, model), model=response.model or model)


def utf8_safe(text: str) -> str:
    """`text` with each lone surrogate as U+FFFD. JSON can carry `\\ud800` and a model may send it; UTF-8
    cannot, and every store, log and HTTP answer that meets the text encodes it (a job view answered 500)."""
    return LONE_SURROGATE.sub("\ufffd", text)


def usage_of(response: Any, model: str) -> Usage:
    """Tokens as the provider counted them; cost only when litellm knows the model's prices."""
    counted = getattr(response, "usage", None)
    return Usage(
        calls=1,
        input_tokens=int(getattr(counted, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(counted, "completion_tokens", 0) or 0),
        cost_usd=cost_of(response, model),
    )


def cost_of(response: Any, model: str) -> float | None:
    """litellm's price for this response, or None for models it has no price for (e.g. the offline model).

    `litellm.completion` already priced the response (`_hidden_params["response_cost"]`, None when
    the model is unpriced); pricing it again costs milliseconds of model-map lookups per call, so
    `completion_cost` runs only for responses that did not come through `completion`.
    """
    hidden = getattr(response, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        return float(cost) if cost is not None else None
    try:
        return float(_litellm().completion_cost(completion_response=response, model=model))
    except Exception:  # noqa: BLE001 - an unpriced model is not an error, only an unknown cost
        return None


def translate_error(exc: Exception, model: str) -> LLMCallError | None:
    """litellm/openai exception -> toolout error, or None when it is not a provider failure.

    Order matters: litellm's Timeout is a kind of connection error, and both are kinds of APIError.
    """
    import openai

    details = {"model": model, "provider_error": type(exc).__name__, "status_code": getattr(exc, "status_code", None)}
    text = f"model call failed ({type(exc).__name__}): {str(exc)[:500]}"
    if isinstance(exc, openai.RateLimitError):
        return LLMRateLimited(text, retryable=True, **details)
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(text, retryable=True, **details)
    if isinstance(exc, openai.APIConnectionError):
        return LLMCallError(text, retryable=True, **details)
    if isinstance(exc, openai.APIError):
        return LLMCallError(text, retryable=details["status_code"] in RETRYABLE_STATUS, **details)
    return None


def model_limits(model: str, *, default_context: int, default_max_output: int) -> tuple[int, int]:
    """(context tokens, output tokens to reserve) for `model`.

    Unknown models get the defaults. For known models the output reservation is the smaller of
    the model's maximum and `default_max_output`: the operator's setting is what each answer may
    spend, the model's maximum only caps it (reserving 64k output tokens would starve chunks).
    """
    try:
        info = _litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - litellm raises plain Exception subclasses for unmapped models
        return default_context, default_max_output
    context = info.get("max_input_tokens") or info.get("max_tokens") or default_context
    output = info.get("max_output_tokens") or info.get("max_tokens")
    return int(context), int(min(output, default_max_output)) if output else default_max_output


def client_from_settings(
    settings: Settings, model: str | None = None, *, pacer: Pacer | None = None, hedger: Hedger | None = None
) -> LiteLLMClient:
    """A client for `model` (default: `TOOLOUT_MODEL`) at its endpoint (`TOOLOUT_MODELS`, else the
    `TOOLOUT_MODEL_API_*` settings)."""
    model = model or settings.model
    endpoint = settings.model_config_for(model)
    return LiteLLMClient(
        model,
        api_base=endpoint.api_base,
        api_key=endpoint.api_key,
        timeout=settings.model_timeout_seconds,
        num_retries=settings.model_num_retries,
        pacer=pacer,
        hedger=hedger,
    )
