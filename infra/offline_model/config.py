"""Knobs that make the offline model slow, flaky or sloppy on purpose, so failure paths get tested.

Process defaults come from `TOOLOUT_OFFLINE_<KNOB>` env vars; one request can override any knob
with the header `X-Offline-Model: key=value;key=value` (e.g. `error_rate=1;error_kinds=429`), so
a single shared server serves every test and benchmark without restarts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

ERROR_KINDS = ("429", "500", "timeout")
MALFORMED = ("none", "no_closing_tag", "think_block", "wrong_nonce", "no_wrapper")
ENV_PREFIX = "TOOLOUT_OFFLINE_"
HEADER = "X-Offline-Model"


@dataclass(frozen=True)
class OfflineModelConfig:
    """Behaviour of the offline model (deterministic, no LLM).

    latency_ms/jitter_ms: added delay; jitter is derived from the request hash, not a clock.
    error_rate/error_kinds: share of attempts answered with an injected 429, 500 or a stall
      (`timeout`: the server holds the request for `timeout_s`, longer than any client timeout).
    fail_first: the first N attempts of every distinct request fail (kind from error_kinds), so
      "a retry recovers" is testable without hunting for a seed.
    malformed: shape of final answers (`none` is the correct wrapper).
    retry_after_ms: `retry-after-ms` sent with injected 429s and 500s (small, so client retries stay fast).
    answer_bytes: most bytes of extracted lines per answer (also capped by max_tokens).
    seed: changes which attempts fail, without changing answers.
    """

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    error_rate: float = 0.0
    error_kinds: tuple[str, ...] = ("429", "500")
    fail_first: int = 0
    malformed: str = "none"
    timeout_s: float = 600.0
    retry_after_ms: int = 10
    answer_bytes: int = 6_000
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be within [0, 1], got {self.error_rate}")
        if not self.error_kinds or set(self.error_kinds) - set(ERROR_KINDS):
            raise ValueError(
                f"error_kinds must be a non-empty subset of {','.join(ERROR_KINDS)}, got {self.error_kinds}"
            )
        if self.malformed not in MALFORMED:
            raise ValueError(f"malformed must be one of {'|'.join(MALFORMED)}, got {self.malformed!r}")
        if (
            min(self.latency_ms, self.jitter_ms, self.timeout_s, self.retry_after_ms, self.fail_first) < 0
            or self.answer_bytes < 1
        ):
            raise ValueError(
                "latency_ms, jitter_ms, timeout_s, retry_after_ms, fail_first must be >= 0 and answer_bytes >= 1"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OfflineModelConfig:
        """Process defaults from `TOOLOUT_OFFLINE_LATENCY_MS=...` and friends."""
        environ = os.environ if environ is None else environ
        values = {
            f.name: environ[ENV_PREFIX + f.name.upper()]
            for f in dataclasses.fields(cls)
            if ENV_PREFIX + f.name.upper() in environ
        }
        return cls().with_values(values)

    def with_header(self, header: str | None) -> OfflineModelConfig:
        """This config overridden by an `X-Offline-Model: key=value;key=value` header."""
        return self.with_values(parse_header(header or ""))

    def with_values(self, values: Mapping[str, str]) -> OfflineModelConfig:
        """A copy with the named knobs replaced; unknown names and bad values raise ValueError."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"unknown offline model knob(s) {unknown}; known: {', '.join(fields)}")
        converted: dict[str, Any] = {k: _convert(fields[k].default, k, v) for k, v in values.items()}
        return dataclasses.replace(self, **converted)


def parse_header(header: str) -> dict[str, str]:
    """`latency_ms=50; error_kinds=429,timeout` -> {'latency_ms': '50', 'error_kinds': '429,timeout'}."""
    pairs = [part.split("=", 1) for part in header.split(";") if part.strip()]
    if any(len(p) != 2 for p in pairs):
        raise ValueError(f"{HEADER} must look like key=value;key=value, got {header!r}")
    return {k.strip(): v.strip() for k, v in pairs}


def _convert(default: object, name: str, raw: str) -> Any:
    """Parse a knob's text by the type of its default."""
    try:
        if isinstance(default, tuple):
            return tuple(x.strip() for x in raw.split(",") if x.strip())
        if isinstance(default, bool):
            return raw.lower() in ("1", "true", "yes")
        parse: Callable[[str], Any] = type(default)  # int, float or str: each parses its own text
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"offline model knob {name}={raw!r}: {exc}") from exc
