"""Deterministic, realistic oversized tool outputs with planted facts, for the demo, tests and benchmarks.

Generated as a stream of byte blocks so that a 1 GB output never has to exist in memory.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CITIES = ["Lisbon", "Osaka", "Denver", "Nairobi", "Tallinn", "Recife", "Hanoi", "Quebec", "Perth", "Bergen"]
PRODUCTS = ["router", "sensor", "gateway", "switch", "camera", "thermostat", "badge", "lock", "meter", "relay"]
STATUSES = ["delivered", "shipped", "processing", "delivered", "delivered", "refunded"]
SERVICES = ["api-gateway", "billing", "auth", "search", "inventory", "notifier"]
INFO_MESSAGES = [
    "request completed status=200 route=/v2/items latency_ms={n}",
    "cache hit ratio={r} window=60s",
    "scheduled job sync-catalog finished items={n}",
    "health probe ok upstream=inventory latency_ms={n}",
    "user session refreshed ttl=3600 shard={s}",
]
WARN_MESSAGES = [
    "slow query detected duration_ms={n} table=orders",
    "retrying upstream call attempt=2 route=/v2/prices",
]


@dataclass(frozen=True)
class Planted:
    """A fact hidden in a generated output, and a request that should find it."""

    needle: str
    request: str


ORDER_NEEDLE = Planted(
    needle="ORD-77731",
    request="Find the order with id ORD-77731: give its customer, status and the failure_reason.",
)
ORDER_COUNT_STATUS = "refunded"
ORDER_COUNT_REQUEST = f"How many orders have status {ORDER_COUNT_STATUS}, and what is their total_cents?"
"""A question only an exact reader answers: the count and sum over every record (see `order_totals`)."""

POOL_INCIDENT = Planted(
    needle="connection pool exhausted",
    request="Find incidents where the database connection pool was exhausted: timestamps, service and the error text.",
)


CORPUS_ENV = "TOOLOUT_CORPUS_DIR"
"""Where the real-content corpus is, when not at its default place (`../shared/corpus` from the checkout)."""


class CorpusMissing(FileNotFoundError):
    """CI runs beside the corpus: there a missing corpus is a broken setup, not a reason to skip."""


def corpus_dir(repo_root: Path, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The real-content corpus (files nobody here wrote), or None when absent outside CI.

    `TOOLOUT_CORPUS_DIR` overrides the default, `<repo_root>/../shared/corpus` (CI clones the repo
    beside `shared/`). With `CI=true` an absent corpus raises `CorpusMissing`, so the benches and tests
    that read it fail there instead of skipping silently.
    """
    chosen = environ.get(CORPUS_ENV) or str(repo_root.resolve().parent / "shared" / "corpus")
    path = Path(chosen)
    if (path / "README.md").is_file():
        return path
    if environ.get("CI", "").lower() == "true":
        raise CorpusMissing(f"no corpus at {path} (set {CORPUS_ENV}); CI=true needs it")
    return None


def _blocks(pieces: Iterator[str], block_bytes: int) -> Iterator[bytes]:
    buffer: list[bytes] = []
    size = 0
    for piece in pieces:
        data = piece.encode()
        buffer.append(data)
        size += len(data)
        if size >= block_bytes:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def _order(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "id": f"ORD-{1_000_000 + n}",  # 7 digits: never equal to (or a prefix of) the planted 5-digit id
        "customer": {"name": f"customer-{rng.randrange(10**6):06d}", "city": rng.choice(CITIES)},
        "items": [
            {"sku": f"SKU-{rng.randrange(10**5):05d}", "product": rng.choice(PRODUCTS), "qty": rng.randint(1, 9)}
            for _ in range(rng.randint(1, 3))
        ],
        "status": rng.choice(STATUSES),
        "total_cents": rng.randrange(500, 500_000),
    }


PLANTED_ORDER = {
    "id": "ORD-77731",
    "customer": {"name": "customer-424242", "city": "Tallinn"},
    "items": [{"sku": "SKU-31337", "product": "gateway", "qty": 2}],
    "status": "payment_failed",
    "failure_reason": "card declined by issuer (code 05, do not honor)",
    "total_cents": 129_900,
}


def json_orders(total_bytes: int, *, seed: int = 7, block_bytes: int = 1 << 20) -> Iterator[bytes]:
    """A minified JSON array of order records (one long line), with `PLANTED_ORDER` about 61% in."""
    return _blocks(_json_pieces(total_bytes, seed), block_bytes)


def _json_pieces(total_bytes: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    yield "["
    written, n, planted = 1, 0, False
    while written < total_bytes:
        record = PLANTED_ORDER if not planted and written >= total_bytes * 0.61 else _order(rng, n)
        planted = planted or record is PLANTED_ORDER
        piece = ("," if n else "") + json.dumps(record, separators=(",", ":"))
        written += len(piece)
        n += 1
        yield piece
    yield "]"


def order_totals(total_bytes: int, status: str = ORDER_COUNT_STATUS, *, seed: int = 7) -> tuple[int, int]:
    """(how many orders of `json_orders(total_bytes, seed=seed)` have `status`, the sum of their total_cents).

    Computed from the same generator, one record at a time: the exact answer `ORDER_COUNT_REQUEST` has.
    """
    count = cents = 0
    for piece in _json_pieces(total_bytes, seed):
        if piece in ("[", "]"):
            continue
        order = json.loads(piece.lstrip(","))
        if order["status"] == status:
            count, cents = count + 1, cents + order["total_cents"]
    return count, cents


def service_log(total_bytes: int, *, seed: int = 11, block_bytes: int = 1 << 20, incidents: int = 3) -> Iterator[bytes]:
    """A multi-service log with `incidents` planted pool-exhaustion errors spread through it."""
    return _blocks(_log_lines(total_bytes, seed, incidents), block_bytes)


def _log_lines(total_bytes: int, seed: int, incidents: int) -> Iterator[str]:
    rng = random.Random(seed)
    marks = [total_bytes * (i + 1) // (incidents + 1) for i in range(incidents)]
    written, second = 0, 0
    while written < total_bytes:
        second += rng.randint(0, 2)
        line = _incident_line(second, len(marks)) if marks and written >= marks[0] else _log_line(rng, second)
        if marks and written >= marks[0]:
            marks.pop(0)
        written += len(line)
        yield line


def _timestamp(second: int) -> str:
    day, rest = divmod(second, 86400)
    return f"2026-11-{1 + day % 28:02d}T{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}Z"


def _log_line(rng: random.Random, second: int) -> str:
    warn = rng.random() < 0.03
    template = rng.choice(WARN_MESSAGES if warn else INFO_MESSAGES)
    text = template.format(n=rng.randrange(1, 2000), r=round(rng.random(), 3), s=rng.randrange(64))
    return (
        f"{_timestamp(second)} {'WARN ' if warn else 'INFO '} {rng.choice(SERVICES)}[{rng.randrange(1, 40)}] {text}\n"
    )


def _incident_line(second: int, left: int) -> str:
    return (
        f"{_timestamp(second)} ERROR billing[7] db: connection pool exhausted (max=50, waiting={120 + left * 7}) "
        f"while charging invoice INV-{9000 + left}; requests are failing with HTTP 503\n"
    )
