"""The truncate strategy (and the fallback of every other): keep the top and bottom, cut the middle.

Budgets are UTF-8 bytes of the returned text, and the middle marker's bytes are INCLUDED in the
budget: `len(result.encode()) <= budget_bytes` whenever `budget_bytes >= min_budget(total_bytes)`
(roughly 40 bytes). Below that, only the marker is returned, which is then the one thing over
budget. Cuts fall on UTF-8 character boundaries, so no character is split and no replacement
character is introduced at the edges; bytes that were invalid in the document itself decode to
U+FFFD, and the kept parts shrink until even that fits.

`truncate_head_tail` works from the first and last bytes only (see `read_sizes`), so a worker
truncating a 1 GB blob reads two small ranges instead of loading it. `truncate_json` is the
variant for JSON documents: it returns valid JSON, shrinking long strings, long arrays and big
objects (with markers saying how much was elided) until the result fits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

FALLBACK_WARNING = "WARNING: tool_output fallback to truncate ({reason})."
ELLIPSIS = "\u2026"
_MIN_STRING_CHARS = 16
_MAX_DEPTH = 64
_SEARCH_STEPS = 12


# ---------------------------------------------------------------- plain text


def marker(cut_bytes: int) -> str:
    """The text that replaces the cut middle, saying how many document bytes it stands for."""
    return f"\n\n[... {cut_bytes} bytes truncated ...]\n\n"


def min_budget(total_bytes: int) -> int:
    """The smallest budget that still leaves room for the marker of a `total_bytes` document."""
    return len(marker(total_bytes).encode()) + 1


def read_sizes(budget_bytes: int) -> tuple[int, int]:
    """How many bytes to read from the start and from the end of a document for `truncate_head_tail`."""
    head = budget_bytes // 2
    return head, budget_bytes - head


def truncate_bytes(data: bytes, budget_bytes: int) -> str:
    """Convenience for a document already in memory."""
    head_size, tail_size = read_sizes(budget_bytes)
    return truncate_head_tail(data[:head_size], data[max(0, len(data) - tail_size) :], len(data), budget_bytes)


def truncate_head_tail(head: bytes, tail: bytes, total_bytes: int, budget_bytes: int) -> str:
    """Top and bottom of a `total_bytes` document from its first (`head`) and last (`tail`) bytes.

    A document within the budget comes back whole (decoded) when `head` and `tail` cover it, as
    they do when read with `read_sizes(budget_bytes)`; if they leave a gap, the gap is reported
    with the marker like any other cut rather than failing.
    """
    if total_bytes <= budget_bytes and len(head) + len(tail) >= total_bytes:
        whole = _reassemble(head, tail, total_bytes).decode("utf-8", errors="replace")
        if len(whole.encode()) <= budget_bytes:
            return whole
    return _cut_middle(head, tail, total_bytes, budget_bytes)


def _cut_middle(head: bytes, tail: bytes, total_bytes: int, budget_bytes: int) -> str:
    room = min(budget_bytes - len(marker(total_bytes).encode()), total_bytes - 1)  # head and tail never overlap
    if room <= 0:
        return marker(total_bytes).strip()
    head_text, head_used = _decode_prefix(head[: room // 2], room // 2)
    tail_room = room - room // 2
    tail_text, tail_used = _decode_suffix(tail[max(0, len(tail) - tail_room) :], tail_room)
    return head_text + marker(total_bytes - head_used - tail_used) + tail_text


def fallback_text(reason: str, body: str) -> str:
    """A truncated body announced as a fallback, so the agent knows the extraction did not run."""
    return f"{FALLBACK_WARNING.format(reason=reason)}\n\n{body}"


def _reassemble(head: bytes, tail: bytes, total_bytes: int) -> bytes:
    """The whole document from a prefix and a suffix that together cover it."""
    if len(head) >= total_bytes:
        return head[:total_bytes]
    return head + tail[len(head) + len(tail) - total_bytes :]


def _decode_prefix(raw: bytes, limit: int) -> tuple[str, int]:
    """Decode the longest complete-character prefix of `raw` whose text fits `limit` bytes."""
    raw = _complete_prefix(raw)
    while True:
        text = raw.decode("utf-8", errors="replace")
        excess = len(text.encode()) - limit
        if excess <= 0:
            return text, len(raw)
        raw = _complete_prefix(raw[: len(raw) - excess])


def _decode_suffix(raw: bytes, limit: int) -> tuple[str, int]:
    """Decode the longest complete-character suffix of `raw` whose text fits `limit` bytes."""
    raw = _complete_suffix(raw)
    while True:
        text = raw.decode("utf-8", errors="replace")
        excess = len(text.encode()) - limit
        if excess <= 0:
            return text, len(raw)
        raw = _complete_suffix(raw[excess:])


def _complete_prefix(raw: bytes) -> bytes:
    """Drop a multi-byte character cut short at the end."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if not _is_continuation(byte):
            return raw[:-back] if _sequence_length(byte) > back else raw
    return raw


def _complete_suffix(raw: bytes) -> bytes:
    """Drop the continuation bytes of a character whose start was cut off."""
    skip = 0
    while skip < min(3, len(raw)) and _is_continuation(raw[skip]):
        skip += 1
    return raw[skip:]


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _sequence_length(lead: int) -> int:
    if lead >= 0xF0:
        return 4 if lead <= 0xF7 else 1
    if lead >= 0xE0:
        return 3
    return 2 if lead >= 0xC0 else 1


# ---------------------------------------------------------------- JSON


@dataclass(frozen=True)
class JsonLimits:
    """How much of each JSON construct survives one shrinking pass."""

    string_chars: int
    items: int
    keys: int
    depth: int


def truncate_json(text: str, budget_bytes: int) -> str | None:
    """`text` shrunk to valid JSON within `budget_bytes`, or None when `text` is not JSON.

    First the limits on strings, arrays and objects are searched (largest that fits, structure
    kept to depth 64); only if even the smallest limits overflow does nesting get summarised,
    level by level. The last resort is a JSON string describing what was elided.
    """
    value = _parse_json(text)
    if value is _NOT_JSON:
        return None
    if len(text.encode()) <= budget_bytes:
        return text
    for limits in _limit_candidates(budget_bytes):
        rendered = _fits(value, limits, budget_bytes)
        if rendered is not None:
            return rendered
    return json.dumps(f"{ELLIPSIS} JSON document of {len(text.encode())} bytes elided {ELLIPSIS}", ensure_ascii=False)


_NOT_JSON = object()


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def limits_at(scale: float, budget_bytes: int, depth: int = _MAX_DEPTH) -> JsonLimits:
    """Limits proportional to the budget: `scale` 1.0 is generous, 0.0 is the floor of every limit."""
    return JsonLimits(
        string_chars=max(_MIN_STRING_CHARS, int(budget_bytes * scale)),
        items=max(1, int(budget_bytes * scale / 16)),
        keys=max(1, int(budget_bytes * scale / 16)),
        depth=depth,
    )


def _limit_candidates(budget_bytes: int) -> Iterator[JsonLimits]:
    """Scales from generous to the floor, then shrinking depth: each is tried until one fits."""
    yield limits_at(1.0, budget_bytes)
    for step in range(1, _SEARCH_STEPS):
        yield limits_at(0.5**step, budget_bytes)
    yield limits_at(0.0, budget_bytes)
    depth = _MAX_DEPTH // 2
    while depth >= 0:
        yield limits_at(0.0, budget_bytes, depth)
        depth = depth // 2 if depth > 1 else -1


def _fits(value: Any, limits: JsonLimits, budget_bytes: int) -> str | None:
    rendered = json.dumps(shrink(value, limits), ensure_ascii=False, separators=(",", ":"))
    return rendered if len(rendered.encode()) <= budget_bytes else None


def shrink(value: Any, limits: JsonLimits, depth: int = 0) -> Any:
    """A copy of a parsed JSON value with every construct cut down to `limits`."""
    if isinstance(value, str):
        return shorten_string(value, limits.string_chars)
    if not isinstance(value, (list, dict)):
        return value
    if depth >= limits.depth:
        return _summary(value)
    if isinstance(value, list):
        return _shrink_list(value, limits, depth)
    return _shrink_dict(value, limits, depth)


def shorten_string(value: str, max_chars: int) -> str:
    """Keep the first `max_chars` characters and say how many were dropped (only when that saves space)."""
    dropped = len(value) - max_chars
    note = f"{ELLIPSIS}[+{dropped} chars]"
    return value if dropped <= len(note) else value[:max_chars] + note


def _shrink_list(items: list[Any], limits: JsonLimits, depth: int) -> list[Any]:
    if len(items) <= limits.items + 1:
        return [shrink(item, limits, depth + 1) for item in items]
    first, last = (limits.items + 1) // 2, limits.items // 2
    elided = len(items) - first - last
    kept_tail = items[len(items) - last :] if last else []
    note = f"{ELLIPSIS} {elided} more items {ELLIPSIS}"
    return (
        [shrink(item, limits, depth + 1) for item in items[:first]]
        + [note]
        + [shrink(item, limits, depth + 1) for item in kept_tail]
    )


def _shrink_dict(mapping: dict[str, Any], limits: JsonLimits, depth: int) -> dict[str, Any]:
    keys = list(mapping)
    kept = keys if len(keys) <= limits.keys + 1 else keys[: limits.keys]
    result = {key: shrink(mapping[key], limits, depth + 1) for key in kept}
    if len(kept) < len(keys):
        result[f"{ELLIPSIS} {len(keys) - len(kept)} more keys {ELLIPSIS}"] = None
    return result


def _summary(value: list[Any] | dict[str, Any]) -> str:
    if isinstance(value, list):
        return f"{ELLIPSIS}[array with {len(value)} items]"
    return f"{ELLIPSIS}{{object with {len(value)} keys}}"
