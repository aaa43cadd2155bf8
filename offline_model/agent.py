"""The read-grep sub-agent's side of the conversation, played without a model.

Real sub-agents grep for the salient words, read around the best hit, then report. Playing the
same three moves deterministically lets the tool loop (tool-call parsing, Read/Grep execution,
turn limits, final-report parsing) be tested end to end: Grep first, one Read around the best hit
(or the file head when nothing matched), then an answer from the lines seen.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from offline_model import ranking
from offline_model.describe import NO_RELEVANT_DATA, describe, overview
from offline_model.prompt import NumberedLine, asks_citations, message_text, numbered_lines
from offline_model.ranking import Term, Unit, query_terms, score_units, select_units

READ_BEFORE, READ_LIMIT, HEAD_LIMIT, MAX_PATTERN_TERMS = 5, 15, 40, 6
STOPPED_AT_MAX = "Narrow the pattern"
"""What Grep's result says when it stopped at max_matches (extraction/documents/grep.py)."""


@dataclass(frozen=True)
class AgentStep:
    """Either one tool call to make (`name`, `arguments`) or the final `answer` text."""

    name: str | None = None
    arguments: dict[str, Any] | None = None
    answer: str | None = None

    def call_id(self) -> str:
        """Deterministic, so the same conversation always produces the same call id."""
        digest = hashlib.sha256(f"{self.name}:{json.dumps(self.arguments, sort_keys=True)}".encode()).hexdigest()
        return f"call_{digest[:24]}"


def offers_read_grep(tools: list[dict[str, Any]] | None) -> bool:
    """True when the request offers both Read and Grep (the read-grep strategy's tool set)."""
    names = {(t.get("function") or {}).get("name") for t in tools or [] if isinstance(t, dict)}
    return {"Read", "Grep"} <= names


def grep_pattern(terms: list[Term]) -> str:
    """A regex alternation of the salient terms: identifiers first, then words as the request wrote them."""
    ordered = [t for t in terms if t.strong] + [t for t in terms if not t.strong]
    fragments = [t.grep_fragment for t in ordered if t.strong or len(t.grep_fragment) >= 3]
    return "|".join(re.escape(f) for f in fragments[:MAX_PATTERN_TERMS])


def next_step(messages: list[dict[str, Any]], extract: str, handle: str, *, budget_bytes: int) -> AgentStep:
    """Grep, then Read, then answer; decided from the tool calls and results already in the conversation."""
    terms = query_terms(extract)
    called = _called_tools(messages)
    results = [message_text(m) for m in messages if m.get("role") == "tool"]
    pattern = grep_pattern(terms)
    if not results and pattern:
        return AgentStep(
            "Grep", {"handle": handle, "pattern": pattern, "regex": True, "ignore_case": True, "max_matches": 50}
        )
    if not results:
        return AgentStep("Read", {"handle": handle, "offset": 1, "limit": HEAD_LIMIT})
    if called == ["Grep"] and STOPPED_AT_MAX in results[0]:
        narrower = rarest_term(terms, results[0], handle)
        if narrower and narrower != pattern:
            return AgentStep(
                "Grep", {"handle": handle, "pattern": narrower, "regex": True, "ignore_case": True, "max_matches": 50}
            )
    if "Read" not in called and len(results) <= 2:
        return _read_after_grep(_with_hits(results, handle), terms, handle)
    answer = final_answer(results, terms, handle, pattern, budget_bytes=budget_bytes, cite=asks_citations(messages))
    return AgentStep(answer=answer)


def rarest_term(terms: list[Term], grep_result: str, handle: str) -> str | None:
    """The request's term seen on the fewest of the hit lines (identifiers first, then the longest), as a pattern.

    Grep stopped at max_matches: one common word flooded the hits, so the rarest one narrows the search.
    """
    hits = [line.text.lower() for line in numbered_lines(grep_result, handle) if line.hit]
    fragments = {t.grep_fragment.lower(): t for t in terms if t.strong or len(t.grep_fragment) >= 4}
    if len(fragments) < 2:
        return None
    seen = {f: sum(f in line for line in hits) for f in fragments}
    best = min(fragments, key=lambda f: (seen[f], not fragments[f].strong, -len(f)))
    return re.escape(best)


def _with_hits(results: list[str], handle: str) -> str:
    """The newest grep result that matched something (a narrowed grep may find nothing)."""
    for result in reversed(results):
        if any(line.hit for line in numbered_lines(result, handle)):
            return result
    return results[-1]


def _called_tools(messages: list[dict[str, Any]]) -> list[str]:
    """Names of the tools the assistant already called in this conversation."""
    calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    return [(c.get("function") or {}).get("name", "") for c in calls]


def _read_after_grep(grep_result: str, terms: list[Term], handle: str) -> AgentStep:
    """Read around the best grep hit; with no hit, read the file head to say what it holds."""
    hits = [line for line in numbered_lines(grep_result, handle) if line.hit]
    if not hits:
        return AgentStep("Read", {"handle": handle, "offset": 1, "limit": HEAD_LIMIT})
    best = _best_hit(hits, terms)
    return AgentStep("Read", {"handle": handle, "offset": max(1, best.number - READ_BEFORE), "limit": READ_LIMIT})


def _best_hit(hits: list[NumberedLine], terms: list[Term]) -> NumberedLine:
    """The hit scoring highest for the request (the first one on ties)."""
    scores = score_units([Unit(h.number, h.text) for h in hits], terms)
    return hits[max(range(len(hits)), key=lambda i: (scores[i], -i))]


def final_answer(
    results: list[str], terms: list[Term], handle: str, pattern: str, *, budget_bytes: int, cite: bool = False
) -> str:
    """The report: best lines among everything the tools returned (cited `[L12] …` when asked), or NO RELEVANT
    DATA FOUND."""
    seen = _seen_lines(results, handle)
    text = "\n".join(line.text for line in seen)
    if not terms:
        return overview(text)
    units = [Unit(line.number, line.text) for line in seen]
    chosen = select_units(units, score_units(units, terms), terms, budget_bytes=budget_bytes)
    if not chosen:
        return _not_found(seen, results, handle, pattern)
    return "\n".join(ranking.cite(unit.line_no, text) if cite else text for unit, text in chosen)


def _seen_lines(results: list[str], handle: str) -> list[NumberedLine]:
    """Every numbered line from every tool result, once per line number, in file order."""
    by_number: dict[int, NumberedLine] = {}
    for result in results:
        for line in numbered_lines(result, handle):
            by_number.setdefault(line.number, line)
    return [by_number[n] for n in sorted(by_number)]


def _not_found(seen: list[NumberedLine], results: list[str], handle: str, pattern: str) -> str:
    """Explain what was searched and what the file looked like where it was read."""
    searched = f"Searched {handle} with Grep /{pattern}/ (case-insensitive); no line matched the request."
    if not seen:
        return f"{NO_RELEVANT_DATA}\n{searched}\nThe tools returned: {results[-1][:300]}"
    subject = f"The {len(seen)} lines read from {handle} (lines {seen[0].number}-{seen[-1].number})"
    return f"{NO_RELEVANT_DATA}\n{searched}\n{describe(chr(10).join(s.text for s in seen), subject=subject)}"
