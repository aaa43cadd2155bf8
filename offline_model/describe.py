"""Say what a text contains, for the `NO RELEVANT DATA FOUND` answers the prompts ask for.

The prompts require a "short description of what kind of information is available" whenever
nothing matched; callers (and the reduce step) show it to the agent so it can re-ask better.
A few cheap shape checks (JSON, logs, CSV, prose) are enough to make that description useful.
Pure stdlib, no I/O.
"""

from __future__ import annotations

import re
from collections import Counter

NO_RELEVANT_DATA = "NO RELEVANT DATA FOUND"
SAMPLE_CHARS = 200_000
LEVELS = ("TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "FATAL", "CRITICAL")

_JSON_KEY = re.compile(r'"([A-Za-z_][\w\-]{0,40})"\s*:')
_LEVEL = re.compile(r"\b(" + "|".join(LEVELS) + r")\b")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?")
_WORD = re.compile(r"[A-Za-z][A-Za-z_\-]{2,}")
# a word list reads best packed, not one word per line
# fmt: off
_COMMON = frozenset(
    [
        "the", "and", "for", "with", "that", "this", "from", "are", "was", "were", "have", "has", "not", "but",
        "all", "any", "can", "its", "into", "than", "then", "there", "their", "they", "them", "these", "those",
        "will", "would", "which", "when", "what", "where", "who", "how", "you", "your", "our", "his", "her", "she",
        "him",
    ]
)
# fmt: on


def describe(text: str, *, subject: str | None = None) -> str:
    """One sentence: size and apparent shape, e.g. '... it looks like log lines with levels INFO/WARN'."""
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    subject = subject or f"The text has {lines} line{'s' * (lines != 1)} ({len(text.encode())} bytes)"
    return f"{subject}; it looks like {kind_of(text)}."


def kind_of(text: str) -> str:
    """The first shape that fits: JSON, log lines, delimited rows, else prose with its frequent words."""
    sample = text[:SAMPLE_CHARS]
    lines = [line for line in sample.splitlines() if line.strip()][:2_000]
    if not lines:
        return "empty text"
    last = text.rstrip().rsplit("\n", 1)[-1][:500]
    return _json_kind(sample) or _log_kind(lines, last) or _delimited_kind(lines) or _prose_kind(sample)


def _json_kind(sample: str) -> str | None:
    """JSON arrays/objects/records, named by their most frequent keys."""
    keys = Counter(_JSON_KEY.findall(sample))
    if sum(keys.values()) < 3:
        return None
    names = ", ".join(k for k, _ in keys.most_common(8))
    head = sample.lstrip()[:2]
    if head.startswith("[") and "{" in sample[:200]:
        return f"a JSON array of objects with keys {names}"
    if head.startswith("{") and sample.count("\n{") >= 2:
        return f"JSON lines (one object per line) with keys {names}"
    if head.startswith("{"):
        return f"a JSON object with keys {names}"
    return f"JSON-like records with keys {names}"


def _log_kind(lines: list[str], last: str) -> str | None:
    """Log lines: at least a fifth of the lines carry a level; name the levels and the time span."""
    levels = Counter(m.group(1) for line in lines if (m := _LEVEL.search(line)))
    if sum(levels.values()) < max(1, len(lines) // 5):
        return None
    named = "/".join(level for level in LEVELS if level in levels)
    stamps = [m.group(0) for line in (lines[0], last) if (m := _TIMESTAMP.search(line))]
    span = f", timestamps {stamps[0]} to {stamps[-1]}" if len(stamps) == 2 else ""
    return f"log lines with levels {named}{span}"


def _delimited_kind(lines: list[str]) -> str | None:
    """CSV/TSV: the same number of separators on most of the first lines; the first row is the header."""
    for sep, name in ((",", "CSV"), ("\t", "tab-separated"), ("|", "pipe-separated")):
        counts = [line.count(sep) for line in lines[:20]]
        if counts[0] >= 2 and sum(c == counts[0] for c in counts) >= 0.8 * len(counts):
            header = ", ".join(col.strip() for col in lines[0].split(sep)[:8])
            return f"{name} rows with columns {header}"
    return None


def _prose_kind(sample: str) -> str:
    """Anything else: plain text, named by its most frequent longer words."""
    words = Counter(w.lower() for w in _WORD.findall(sample) if w.lower() not in _COMMON)
    top = ", ".join(w for w, _ in words.most_common(6))
    return f"plain text (frequent words: {top})" if top else "text without words (symbols or numbers)"


def no_relevant_data(text: str, searched: list[str]) -> str:
    """The prompts' not-found answer: the marker, what was searched, what the text holds instead."""
    looked_for = ", ".join(searched[:12])
    return f"{NO_RELEVANT_DATA}\nSearched for: {looked_for} (no line matches).\n{describe(text)}"


def overview(text: str, head: int = 5) -> str:
    """For a request with no searchable words (e.g. 'summarize'): shape plus the first lines."""
    first = [line[:300] for line in text.splitlines() if line.strip()][:head]
    return "\n".join([describe(text), "First lines:", *first])
