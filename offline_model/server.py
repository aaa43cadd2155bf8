"""HTTP face of the offline model: an OpenAI-compatible chat-completions endpoint, no LLM inside.

litellm talks to it exactly as to a provider (`openai/toolout-offline` + api_base), so the demo,
tests and benchmarks exercise the real client path: HTTP, retries, error mapping, usage, tool
calls. Faults (latency, 429/500, stalls) are injected here, per request, from the knobs: a share of all
attempts (`error_rate`, `fail_first`) or every attempt of the targeted calls (`fault`, see `targeting`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from functools import lru_cache
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from extraction.tokenizer_files import ensure_offline_encodings
from offline_model.config import HEADER, OfflineModelConfig
from offline_model.limits import ProviderLimits, ServedCounts
from offline_model.prompt import message_text
from offline_model.responder import NAME, Answer, respond
from offline_model.tails import TailCounts, TailPlan
from offline_model.targeting import injected_error

log = logging.getLogger("toolout.offline_model")
MODEL_ID = "toolout-offline"
KEEP_ALIVE_SECONDS = 75
"""How long an idle connection stays open: longer than a client keeps one to reuse (httpx and the openai SDK: 5 s,
uvicorn's own default too), so the client always closes first. With the two equal, a call sent as the server
closed its side failed with a connection error (an agent framework's test saw one under load)."""
OWNED_BY = "toolout (offline, deterministic, no LLM)"
ERROR_TYPES = {"429": (429, "rate_limit_error"), "500": (500, "server_error"), "timeout": (504, "timeout")}


def create_app(config: OfflineModelConfig | None = None) -> FastAPI:
    """The app; `config` defaults to the `TOOLOUT_OFFLINE_*` environment."""
    ensure_offline_encodings()
    _encoding()  # load the BPE now, not inside the first request's latency
    base = config or OfflineModelConfig.from_env()
    faults = FaultPlan()
    tails = TailPlan()
    limits = ProviderLimits(base.rpm, base.tpm)
    app = FastAPI(title=NAME, description="Deterministic OpenAI-compatible test double for toolout. Not an LLM.")

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "service": NAME}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": OWNED_BY}]}

    @app.get("/stats")
    async def stats() -> dict[str, Any]:
        """Calls answered and refused by the rpm/tpm limits, when answering began and ended, and the tail's
        calls (`slow`, and `cancelled`: their client went away first)."""
        counts = dataclasses.asdict(limits.counts)
        return {"rpm": limits.rpm, "tpm": limits.tpm, **counts, "tails": dataclasses.asdict(tails.counts)}

    @app.delete("/stats")
    async def reset_stats() -> dict[str, Any]:
        """Start counting afresh (a bench measures one run at a time); the limits' buckets are kept."""
        limits.counts = ServedCounts()
        tails.counts = TailCounts()
        return {"rpm": limits.rpm, "tpm": limits.tpm, **dataclasses.asdict(limits.counts)}

    async def chat(request: Request) -> JSONResponse:
        return await handle_chat(request, base, faults, limits, tails)

    app.add_api_route("/v1/chat/completions", chat, methods=["POST"])
    app.add_api_route("/chat/completions", chat, methods=["POST"], include_in_schema=False)
    return app


async def handle_chat(
    request: Request,
    base: OfflineModelConfig,
    faults: FaultPlan,
    limits: ProviderLimits | None = None,
    tails: TailPlan | None = None,
) -> JSONResponse:
    """Validate, enforce the rpm/tpm limits, wait the configured latency (times the tail's multiplier for the
    calls that draw it), maybe inject a fault, else answer."""
    try:
        knobs = base.with_header(request.headers.get(HEADER))
        body = await _json_body(request)
    except ValueError as exc:
        return error_response(400, str(exc), "invalid_request_error")
    if limits is not None and (refused := over_limits(body, limits)) is not None:
        return refused
    digest = request_digest(body)
    if not await wait_latency(request, knobs, digest, tails):
        return error_response(499, f"{NAME}: the client went away before the answer", "client_closed_request")
    fault = injected_error(body, knobs) or faults.decide(knobs, digest)
    if fault is not None:
        return await inject(fault, knobs, request)
    started = time.perf_counter()
    payload = await run_in_threadpool(completion, body, knobs, digest)
    log.info("%s: %s answer in %.0f ms", NAME, payload.pop("_kind"), (time.perf_counter() - started) * 1000)
    return EscapedJSONResponse(payload)


class EscapedJSONResponse(JSONResponse):
    """JSON with every non-ASCII character as a `\\u` escape, as providers often send it: a lone surrogate
    (the `lone_surrogate` knob) travels as `\\ud800` the way it does from a real model."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


async def _json_body(request: Request) -> dict[str, Any]:
    """The request body, checked just enough to give a clear 400 instead of a 500."""
    try:
        body = json.loads(await request.body())
    except json.JSONDecodeError as exc:
        raise ValueError(f"request body is not JSON: {exc}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        raise ValueError("body must be a JSON object with a non-empty 'messages' list")
    if body.get("stream"):
        raise ValueError(f"{NAME} does not stream; send stream=false")
    return body


def over_limits(body: dict[str, Any], limits: ProviderLimits) -> JSONResponse | None:
    """The 429 a provider sends past its rpm/tpm (with how long until the request would pass), else None."""
    tokens = prompt_tokens(body) + int(body.get("max_tokens") or 0) if limits.tpm else 0
    wait = limits.admit(tokens)
    if wait <= 0:
        return None
    log.info("%s: over its limits (rpm=%d, tpm=%d); retry in %.2f s", NAME, limits.rpm, limits.tpm, wait)
    headers = {"retry-after-ms": str(max(1, int(wait * 1000)))}
    message = f"{NAME}: rate limit reached (rpm={limits.rpm}, tpm={limits.tpm}); retry in {wait:.2f} s"
    return error_response(429, message, "rate_limit_error", headers)


def request_digest(body: dict[str, Any]) -> str:
    """Identity of a request (messages, tools, model): seeds jitter and fault decisions."""
    key = {k: body.get(k) for k in ("model", "messages", "tools", "max_tokens")}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def unit_interval(*parts: object) -> float:
    """A deterministic number in [0, 1) from the given parts."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def delay_seconds(knobs: OfflineModelConfig, digest: str) -> float:
    """Latency plus jitter; the jitter comes from the request hash, so reruns wait the same."""
    return (knobs.latency_ms + knobs.jitter_ms * unit_interval("jitter", digest)) / 1000


async def wait_latency(request: Request, knobs: OfflineModelConfig, digest: str, tails: TailPlan | None) -> bool:
    """The call's delay; with a tail configured, cut short (False) when the client goes away meanwhile."""
    if tails is None or knobs.tail_fraction <= 0:
        await asyncio.sleep(delay_seconds(knobs, digest))
        return True
    seconds = delay_seconds(knobs, digest) * tails.multiplier(knobs, digest, unit_interval)
    return await tails.wait(seconds, request.is_disconnected)


class FaultPlan:
    """Which attempts fail: a function of (seed, request, attempt number), so a retry can succeed.

    Counting attempts per request (not one global counter) keeps the outcome independent of how
    concurrent map calls interleave.
    """

    def __init__(self, max_tracked: int = 50_000) -> None:
        self._attempts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_tracked

    def decide(self, knobs: OfflineModelConfig, digest: str) -> str | None:
        """The fault kind for this attempt, or None to answer normally."""
        if knobs.error_rate <= 0 and knobs.fail_first <= 0:
            return None
        attempt = self._next_attempt(digest)
        if attempt >= knobs.fail_first and (
            0 < knobs.max_faults <= attempt or unit_interval(knobs.seed, digest, attempt) >= knobs.error_rate
        ):
            return None
        return knobs.error_kinds[int(unit_interval("kind", knobs.seed, digest, attempt) * len(knobs.error_kinds))]

    def _next_attempt(self, digest: str) -> int:
        with self._lock:
            attempt = self._attempts.pop(digest, 0)
            self._attempts[digest] = attempt + 1
            if len(self._attempts) > self._max:
                self._attempts.popitem(last=False)
            return attempt


async def inject(fault: str, knobs: OfflineModelConfig, request: Request) -> JSONResponse:
    """Answer with the injected fault; `timeout` holds the request until the client gives up.

    429s and 500s carry `retry-after-ms` (the `retry_after_ms` knob) so client retries stay fast.
    """
    status, kind = ERROR_TYPES[fault]
    log.info("%s: injecting %s", NAME, fault)
    if fault == "timeout":
        await stall(request, knobs.timeout_s)
    headers = {"retry-after-ms": str(knobs.retry_after_ms)} if fault != "timeout" else None
    return error_response(
        status,
        f"{NAME}: injected {fault} (error_rate={knobs.error_rate}, fail_first={knobs.fail_first}, fault={knobs.fault})",
        kind,
        headers,
    )


async def stall(request: Request, seconds: float) -> None:
    """Sleep up to `seconds`, returning early once the client has disconnected."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not await request.is_disconnected():
        await asyncio.sleep(0.05)


def error_response(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An OpenAI-shaped error body, which litellm maps to its exception classes by status."""
    return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": kind}}, status, headers)


def completion(body: dict[str, Any], knobs: OfflineModelConfig, digest: str) -> dict[str, Any]:
    """The OpenAI chat.completion object for this request (plus `_kind` for the log line)."""
    answer = respond(body, knobs)
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.tool_calls:
        message["tool_calls"] = answer.tool_calls
    return {
        "id": f"chatcmpl-offline-{digest[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or MODEL_ID,
        "system_fingerprint": "toolout-offline-deterministic",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if answer.tool_calls else "stop",
            }
        ],
        "usage": usage(body, answer),
        "_kind": answer.kind,
    }


def usage(body: dict[str, Any], answer: Answer) -> dict[str, int]:
    """Tokens counted with o200k_base, with OpenAI's small per-message overhead."""
    prompt = prompt_tokens(body)
    calls = "".join(c["function"]["name"] + c["function"]["arguments"] for c in answer.tool_calls)
    completion_tokens = count_tokens((answer.content or "") + calls)
    return {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens}


def prompt_tokens(body: dict[str, Any]) -> int:
    """The request's prompt tokens: its messages with OpenAI's per-message overhead, and its tools."""
    counted = 3 + sum(4 + count_tokens(_message_payload(m)) for m in body["messages"])
    return counted + (count_tokens(json.dumps(body["tools"])) if body.get("tools") else 0)


def _message_payload(message: dict[str, Any]) -> str:
    """The text a message costs: its content plus any tool calls it carries."""
    calls = message.get("tool_calls") or []
    return message_text(message) + "".join(json.dumps(c.get("function", {})) for c in calls if isinstance(c, dict))


def count_tokens(text: str) -> int:
    """o200k_base token count; special-token look-alikes in documents count as plain text."""
    return len(_encoding().encode_ordinary(text)) if text else 0


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


def serve(
    host: str = "127.0.0.1", port: int = 8765, config: OfflineModelConfig | None = None, *, log_level: str = "info"
) -> None:
    """Run the offline model in the foreground (what `toolout offline-model` calls)."""
    import uvicorn

    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.info("%s serving http://%s:%d/v1 (model id %s)", NAME, host, port, MODEL_ID)
    uvicorn.run(create_app(config), host=host, port=port, log_level=log_level, timeout_keep_alive=KEEP_ALIVE_SECONDS)
