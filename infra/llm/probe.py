"""Is the model endpoint of each stage answering? The readiness probe's view of the model (`/readyz`).

Without it `/readyz` said ready while the model was dead, and every job then ended as truncate +
WARNING. The probe is deliberately cheap: `GET {api_base}/models` (free on every OpenAI-compatible
server, the offline model included), a short timeout, the answer cached a few seconds so a load
balancer polling every second costs one request per endpoint per cache period — never a paid
completion. What counts:

* any answer below 500 (a 404 too: some proxies serve no `/models`, but the server is there) → up,
  except 401/403: the key is refused, so every call would fail too → down;
* 5xx, a refused connection, a timeout (a server that accepts and never answers) → down, with why.

A model with no `api_base` goes where its provider's variables say (`infra.llm.provider`): `OPENAI_BASE_URL`
is probed like any endpoint; a provider's public endpoint (api.openai.com, Anthropic, …) is not ours to
probe, and the only certain check would be a paid call, so it is reported as up and "not probed" — unless
no key is set for it at all, which is down: every call would be refused. Several stages on one endpoint are
probed once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from infra.llm.provider import destination
from infra.settings import Settings

REFUSED_KEY = frozenset({401, 403})


@dataclass(frozen=True)
class ModelEndpoint:
    """The model one stage calls and where: `stage` is "model" while one model serves every stage."""

    stage: str
    model: str
    api_base: str | None
    api_key: str | None = field(default=None, repr=False)
    missing_keys: tuple[str, ...] = ()

    @property
    def check_name(self) -> str:
        return "model" if self.stage == "model" else f"model:{self.stage}"


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    detail: str


def model_endpoints(settings: Settings) -> list[ModelEndpoint]:
    """Each stage's model endpoint: the one model today; one per stage where settings name stage models.

    Written against both shapes of `Settings`: a `stage_model(stage)` / `model_config_for(model)` pair
    (per-stage models) is used when present, else the single `model` / `model_api_base`.
    """
    stage_model = getattr(settings, "stage_model", None)
    config_for = getattr(settings, "model_config_for", None)
    if stage_model is None or config_for is None:
        return [ModelEndpoint("model", settings.model, settings.model_api_base, settings.model_api_key)]
    endpoints = []
    for stage in getattr(settings, "stages", ("map", "reduce", "agent")):
        going = destination(settings, stage_model(stage))
        endpoints.append(ModelEndpoint(stage, going.model, going.api_base, going.api_key, going.missing_keys))
    if len({(e.model, e.api_base) for e in endpoints}) == 1:  # every stage on one model: one check, `model`
        return [dataclasses.replace(endpoints[0], stage="model")]
    return endpoints


def probe_endpoint(endpoint: ModelEndpoint, timeout: float, get: Callable[..., Any] = httpx.get) -> ProbeResult:
    """One `GET {api_base}/models`, bounded by `timeout` (connect and read each)."""
    where = f"{endpoint.model} at {endpoint.api_base}"
    if endpoint.missing_keys:
        keys = " or ".join(endpoint.missing_keys)
        return ProbeResult(False, f"{endpoint.model}: no API key (set {keys}, or TOOLOUT_MODEL_API_KEY)")
    if endpoint.api_base is None:
        return ProbeResult(True, f"{endpoint.model}: the provider's own endpoint (no api_base), not probed")
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    started = time.monotonic()
    try:
        response = get(f"{endpoint.api_base.rstrip('/')}/models", headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        return ProbeResult(False, f"{where}: no answer within {timeout:g} s")
    except httpx.HTTPError as exc:
        return ProbeResult(False, f"{where}: {type(exc).__name__}: {exc}")
    status, took = response.status_code, (time.monotonic() - started) * 1000
    if status >= 500 or status in REFUSED_KEY:
        why = "refused the API key" if status in REFUSED_KEY else "server error"
        return ProbeResult(False, f"{where}: {why} (HTTP {status})")
    return ProbeResult(True, f"{where}: answered HTTP {status} in {took:.0f} ms")


class ModelProbe:
    """Probes each distinct endpoint at most once per `cache_seconds`; concurrent askers share one probe."""

    def __init__(
        self,
        endpoints: Iterable[ModelEndpoint],
        *,
        timeout: float = 2.0,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        get: Callable[..., Any] = httpx.get,
    ) -> None:
        self.endpoints = list(endpoints)
        self._timeout, self._ttl, self._clock, self._get = timeout, cache_seconds, clock, get
        self._cache: dict[tuple[str, str | None], tuple[float, ProbeResult]] = {}
        self._locks: dict[tuple[str, str | None], threading.Lock] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> ModelProbe:
        return cls(
            model_endpoints(settings),
            timeout=settings.model_probe_timeout_seconds,
            cache_seconds=settings.model_probe_cache_seconds,
        )

    def check(self, endpoint: ModelEndpoint) -> ProbeResult:
        """The endpoint's result, probed now unless a fresh one is cached (the readiness route asks
        for every endpoint at once, each in its own thread).
        """
        key = (endpoint.model, endpoint.api_base)
        with self._locks.setdefault(key, threading.Lock()):  # a hanging endpoint must not pile up probes
            cached = self._cache.get(key)
            if cached is not None and self._clock() - cached[0] < self._ttl:
                return cached[1]
            result = probe_endpoint(endpoint, self._timeout, self._get)
            self._cache[key] = (self._clock(), result)
            return result
