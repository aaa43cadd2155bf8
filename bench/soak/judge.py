"""What a soak's numbers mean: the RSS slope of each process after warm-up, and whose keys Redis still holds.

A growth bound alone (`--rss-bound-mb`) lets a slow leak through a short run and fails a long one on settling;
the slope (least squares, MB per minute, over the samples after warm-up) tells them apart at any length. The keys
left behind are split the way an operator asks about them: without a TTL (they stay for ever), and with a TTL but
naming a session or output the run deleted (they stay until it expires: state that should have gone with them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import redis

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def slope_mb_per_minute(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) points, in MB per minute (0 with fewer than two points)."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_mb = sum(mb for _, mb in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return 0.0
    return 60 * sum((t - mean_t) * (mb - mean_mb) for t, mb in points) / spread


def slopes(samples: Sequence[Any], since: float, until: float) -> dict[str, float]:
    """MB per minute of the API and of each worker process over the samples taken from `since` to `until` seconds
    (after warm-up, while the agents ran: the drain's quiet tail would flatter the slope). A worker is judged
    alone (`Sample.workers_own_mb`); with its children (`+children`, shown, not judged) it swings by hundreds of
    MB with the DuckDB sandboxes alive at the moment of the sample."""
    window = [s for s in samples if since <= s.at <= until]
    found = {"api": slope_mb_per_minute([(s.at, s.api_mb) for s in window])}
    workers = len(window[0].workers_mb) if window else 0
    for i in range(workers):
        found[f"worker-{i + 1}"] = slope_mb_per_minute([(s.at, s.workers_own_mb[i]) for s in window])
        found[f"worker-{i + 1}+children"] = slope_mb_per_minute([(s.at, s.workers_mb[i]) for s in window])
    return {name: round(mb, 3) for name, mb in found.items()}


def leftovers(client: redis.Redis, left: Iterable[str], owners: set[str]) -> dict[str, list[str]]:
    """The keys left behind, split: never expiring, expiring but of a deleted session or output, the rest."""
    names = sorted(left)
    forever = without_ttl(client, names)
    deleted = of_deleted(client, names, owners)
    other = [name for name in names if name not in forever and name not in deleted]
    return {"without_ttl": forever, "ttl_of_deleted": deleted, "ttl_other": other}


def without_ttl(client: redis.Redis, names: Iterable[str]) -> list[str]:
    """The keys of `names` that never expire (TTL -1; a key gone meanwhile, -2, is left out)."""
    return sorted(name for name in names if client.ttl(name) == -1)


def of_deleted(client: redis.Redis, names: Iterable[str], owners: set[str]) -> list[str]:
    """The keys of `names` with a TTL whose name or string value names one of `owners` (the run's session ids
    and output handles): a pointer such as `toolout:query:<tenant>:<sha256>:loaded` names its output's blob
    prefix only in its value."""
    found = []
    for name in names:
        if client.ttl(name) < 0:
            continue
        value = client.get(name) if client.type(name) in ("string", b"string") else None
        text = f"{name} {value.decode(errors='replace') if isinstance(value, bytes) else value or ''}"
        if _ids(text) & owners:
            found.append(name)
    return sorted(found)


def _ids(text: str) -> set[str]:
    """The uuid-shaped words of `text` (session ids and handles are uuids)."""
    return set(UUID.findall(text))
