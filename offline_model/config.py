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
MALFORMED = ("none", "no_closing_tag", "think_block", "wrong_nonce", "no_wrapper", "empty_wrapper", "lone_surrogate")
FAULTS = ("none", "no_wrapper", "empty_wrapper", *ERROR_KINDS)
FAULT_ON = ("map", "reduce", "any")
ENV_PREFIX = "TOOLOUT_OFFLINE_"
HEADER = "X-Offline-Model"


@dataclass(frozen=True)
class OfflineModelConfig:
    """Behaviour of the offline model (deterministic, no LLM).

    latency_ms/jitter_ms: added delay; jitter is derived from the request hash, not a clock.
    tail_fraction/tail_multiplier: that share of calls waits that many times the delay (a heavy tail, drawn per
      call: by request and arrival number, so a hedge of a slow request draws afresh; see `tails`).
    error_rate/error_kinds: share of attempts answered with an injected 429, 500 or a stall
      (`timeout`: the server holds the request for `timeout_s`, longer than any client timeout).
    fail_first: the first N attempts of every distinct request fail (kind from error_kinds), so
      "a retry recovers" is testable without hunting for a seed.
    max_faults: no distinct request fails more than N attempts (0 = no cap), so a client whose retry budget
      exceeds N always gets an answer, however `error_rate` falls: a flaky-model test cannot fail by chance.
    malformed: shape of every final answer (`none` is the correct wrapper; `empty_wrapper` has nothing inside;
      `lone_surrogate` ends the content with `\\ud800`, which JSON can carry and UTF-8 cannot).
    fault/fault_on/fault_chunks/fault_marker: one targeted fault, for the calls about ONE part of a
      document rather than a share of all calls. `fault` is what a targeted call gets, on every
      attempt (so a retry does not recover): `no_wrapper` or `empty_wrapper` (the answer's shape, as
      `malformed`), or `429`, `500`, `timeout` (as `error_kinds`). A call is targeted when all given
      filters hold: `fault_on` names its kind (`map`, `reduce` or `any`; read-grep turns never are);
      `fault_chunks` holds its chunk number as the map prompt shows it (`Index: <i> of <n>`, 1-based;
      map calls only); `fault_marker` occurs in its data (a map call's chunk text between the BEGIN and
      END lines, a reduce call's CHUNK OUTPUTS; never the instructions, which quote the request). With
      neither filter, every call of the `fault_on` kind is targeted. E.g. `fault=no_wrapper;fault_chunks=7`
      (chunk 7 never answers in a wrapper), `fault=500;fault_on=reduce;fault_marker=ZX-POISON` (the
      reduce group holding that line fails), `fault=empty_wrapper` (every map finds nothing).
    retry_after_ms: `retry-after-ms` sent with injected 429s and 500s (small, so client retries stay fast).
    answer_bytes: most bytes of extracted lines per answer (also capped by max_tokens).
    seed: changes which attempts fail, without changing answers.
    rpm/tpm: the server's own provider limits (0 = none): past them it answers 429 (see `limits`). Process-wide
      only (`--rpm`, `--tpm`, or `TOOLOUT_OFFLINE_RPM` / `_TPM`); a header cannot change them.
    """

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    tail_fraction: float = 0.0
    tail_multiplier: float = 1.0
    error_rate: float = 0.0
    error_kinds: tuple[str, ...] = ("429", "500")
    fail_first: int = 0
    max_faults: int = 0
    malformed: str = "none"
    fault: str = "none"
    fault_on: str = "map"
    fault_chunks: tuple[str, ...] = ()
    fault_marker: str = ""
    timeout_s: float = 600.0
    retry_after_ms: int = 10
    answer_bytes: int = 6_000
    seed: int = 0
    rpm: int = 0
    tpm: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.error_rate <= 1.0:
            raise ValueError(f"error_rate must be within [0, 1], got {self.error_rate}")
        if not self.error_kinds or set(self.error_kinds) - set(ERROR_KINDS):
            raise ValueError(
                f"error_kinds must be a non-empty subset of {','.join(ERROR_KINDS)}, got {self.error_kinds}"
            )
        if self.malformed not in MALFORMED:
            raise ValueError(f"malformed must be one of {'|'.join(MALFORMED)}, got {self.malformed!r}")
        self._check_fault()
        if not 0.0 <= self.tail_fraction <= 1.0 or self.tail_multiplier < 1.0:
            raise ValueError(
                f"tail_fraction must be within [0, 1] and tail_multiplier >= 1, got {self.tail_fraction}, "
                f"{self.tail_multiplier}"
            )
        if (
            min(
                self.latency_ms,
                self.jitter_ms,
                self.timeout_s,
                self.retry_after_ms,
                self.fail_first,
                self.max_faults,
                self.rpm,
                self.tpm,
            )
            < 0
            or self.answer_bytes < 1
        ):
            raise ValueError(
                "latency_ms, jitter_ms, timeout_s, retry_after_ms, fail_first, max_faults, rpm, tpm must be >= 0 "
                "and answer_bytes >= 1"
            )

    def _check_fault(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {'|'.join(FAULTS)}, got {self.fault!r}")
        if self.fault_on not in FAULT_ON:
            raise ValueError(f"fault_on must be one of {'|'.join(FAULT_ON)}, got {self.fault_on!r}")
        if not all(number.isdigit() and int(number) >= 1 for number in self.fault_chunks):
            raise ValueError(
                f"fault_chunks must be chunk numbers from 1 (as in 'Index: 1 of n'), got {self.fault_chunks}"
            )

    @property
    def chunk_numbers(self) -> frozenset[int]:
        return frozenset(int(number) for number in self.fault_chunks)

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
