"""Lexical relevance ranking: how the offline model "extracts" without any model inside.

The offline model must answer map, reduce and read-grep calls deterministically and plausibly,
so that the whole pipeline (chunking, wrappers, reduce, sub-agent loop) can be exercised with no
LLM. Plausible here means: the lines that share the rarest words with the request come back, a
planted fact is found, and a text without any match is answered `NO RELEVANT DATA FOUND` plus a
short description, exactly as the prompts ask a real model to do. Pure stdlib, no I/O.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from offline_model.describe import NO_RELEVANT_DATA, describe, no_relevant_data, overview

__all__ = [
    "NO_RELEVANT_DATA",
    "Term",
    "Unit",
    "best_lines",
    "describe",
    "extract_answer",
    "merge_chunk_outputs",
    "query_terms",
    "score_units",
    "split_units",
]

_READ_NUMBERED = re.compile(r"^ *(\d{1,12})\t(.*)$")
LONG_LINE_CHARS = 2_000
MAX_LINE_CHARS = 1_000
RELATIVE_THRESHOLD = 0.3
K1, B = 1.2, 0.75

# a word list reads best packed, not one word per line
# fmt: off
STOPWORDS = frozenset(
    [
        "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
        "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do",
        "does", "doing", "down", "during", "each", "either", "else", "etc", "every", "few", "for", "from", "further",
        "get", "gets", "give", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i",
        "if", "in", "into", "is", "it", "its", "itself", "just", "let", "like", "may", "me", "might", "more", "most",
        "must", "my", "no", "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out",
        "over", "own", "please", "same", "she", "should", "show", "so", "some", "such", "than", "that", "the",
        "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
        "up", "upon", "us", "very", "via", "was", "we", "were", "what", "when", "where", "which", "while", "who",
        "whom", "whose", "why", "will", "with", "within", "without", "would", "you", "your", "extract", "extraction",
        "find", "return", "list", "tell", "provide", "report", "identify", "look", "search", "locate", "need",
        "needs", "want", "wants", "lines", "line", "entries", "entry", "information", "info", "details", "detail",
        "data", "text", "document", "documents", "output", "outputs", "tool", "tools", "relevant", "mention",
        "mentions", "mentioned", "containing", "contain", "contains", "related", "regarding", "including", "include",
        "includes", "e", "g", "eg", "ie", "i.e", "e.g", "given", "specific", "exact", "exactly", "precise",
        "precisely", "value", "values", "everything", "anything", "something", "whether", "there's", "it's",
        "summarize", "summarise", "summary", "overview", "describe", "explain", "main", "key", "important",
    ]
)
# fmt: on

_QUOTED = re.compile(r'"([^"\n]{2,200})"|`([^`\n]{2,200})`|(?<![\w])\'([^\'\n]{2,200})\'(?![\w])')
_RAW_TOKEN = re.compile(r"[^\s,;()\[\]{}<>=\"'`]+")
_WORD = re.compile(r"[A-Za-z0-9_]+")
_SUBWORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_INNER_PUNCT = re.compile(r"[A-Za-z0-9_][-.:/@#][A-Za-z0-9_]")
_RECORD_BREAK = re.compile(r"(?<=\})\s*,\s*(?=\{)")


@dataclass(frozen=True)
class Term:
    """One thing to look for. `phrase` terms match as substrings, `ident` as whole tokens, `word` by stem.

    `surface` is the lowercase form the request used; grep patterns are built from it.
    """

    text: str
    kind: str
    strong: bool
    surface: str = ""

    @property
    def grep_fragment(self) -> str:
        """A literal that finds every spelling the stem stands for (policies/policy -> polic)."""
        if self.kind != "word" or not self.surface:
            return self.text
        common = os.path.commonprefix([self.surface, self.text])  # noqa: RUF071 - a character prefix is meant
        return common if len(common) >= 3 else self.surface


@dataclass(frozen=True)
class Unit:
    """A rankable piece of the document: a line, or one record of a very long single line."""

    line_no: int
    text: str


# --- query terms ---------------------------------------------------------------------------------


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A deliberately light stemmer: enough for errors/error, failed/failing, policies/policy."""
    for suffix, repl, min_len in (
        ("ies", "y", 5),
        ("sses", "ss", 5),
        ("ing", "", 6),
        ("ed", "", 5),
        ("es", "", 5),
        ("s", "", 4),
    ):
        if word.endswith(suffix) and len(word) >= min_len and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


def _classify(token: str) -> Term | None:
    """Identifiers, numbers and punctuated names are strong (specific); plain words are not."""
    low = token.lower()
    if len(low) < 2 or low in STOPWORDS:
        return None
    has_digit = any(c.isdigit() for c in token)
    if _INNER_PUNCT.search(token):
        return Term(low, "phrase", has_digit or "_" in token or bool(re.search(r"[.:/@#]", token)), low)
    if token.isdigit():
        return Term(low, "ident", len(token) >= 3, low)
    if has_digit or "_" in token or re.search(r"[a-z][A-Z]", token):
        return Term(low, "ident", True, low)
    return Term(stem(low), "word", False, low)


def query_terms(extract: str) -> list[Term]:
    """What the request asks for: quoted phrases, identifiers, numbers, then stemmed content words."""
    terms: dict[tuple[str, str], Term] = {}
    for match in _QUOTED.finditer(extract):
        phrase = next(g for g in match.groups() if g).strip().lower()
        if phrase and phrase not in STOPWORDS:
            terms.setdefault((phrase, "phrase"), Term(phrase, "phrase", True, phrase))
    unquoted = _QUOTED.sub(" ", extract)
    for raw in _RAW_TOKEN.findall(unquoted):
        term = _classify(raw.strip(".:!?*#-/@"))
        if term is not None:
            terms.setdefault((term.text, term.kind), term)
    return list(terms.values())


# --- units & matching ----------------------------------------------------------------------------


def split_units(text: str, *, long_line_chars: int = LONG_LINE_CHARS) -> list[Unit]:
    """Lines, with very long lines (a 1 MB JSON array) cut into records so one record can be returned."""
    units: list[Unit] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) <= long_line_chars:
            units.append(Unit(number, line))
        else:
            units.extend(Unit(number, piece) for piece in split_long_line(line, long_line_chars))
    return units


def split_long_line(line: str, limit: int) -> list[str]:
    """Split on `},{` record boundaries first, then on commas for records that are still too long."""
    pieces: list[str] = []
    for record in _RECORD_BREAK.split(line):
        pieces.extend([record] if len(record) <= limit else _split_on_commas(record, limit))
    return [p for p in pieces if p.strip()]


def _split_on_commas(text: str, limit: int) -> list[str]:
    """Greedy comma-boundary packing; a comma-free run longer than the limit is cut hard."""
    out, current = [], ""
    for part in text.split(","):
        candidate = f"{current},{part}" if current else part
        if len(candidate) <= limit:
            current = candidate
            continue
        if current:
            out.append(current)
        current = part
        while len(current) > limit:
            out.append(current[:limit])
            current = current[limit:]
    return out + ([current] if current else [])


@lru_cache(maxsize=200_000)
def _token_keys(token: str) -> tuple[str, tuple[str, ...]]:
    """A token's lowercase form (for identifiers) and the stems of it and its camel/snake parts (for words)."""
    low = token.lower()
    parts = {stem(low)} | {stem(p.lower()) for p in _SUBWORD.findall(token)}
    return low, tuple(parts)


class Matcher:
    """Counts term occurrences per unit; the lookup tables are built once per request."""

    def __init__(self, terms: list[Term]) -> None:
        self.phrases = [t for t in terms if t.kind == "phrase"]
        self.idents = {t.text: t for t in terms if t.kind == "ident"}
        self.words = {t.text: t for t in terms if t.kind == "word"}

    def counts(self, unit_text: str) -> tuple[Counter[Term], int]:
        """How often each term occurs in one unit, and the unit's length in tokens."""
        counts: Counter[Term] = Counter()
        if self.phrases:
            low_text = unit_text.lower()
            counts.update({t: low_text.count(t.text) for t in self.phrases if t.text in low_text})
        tokens = _WORD.findall(unit_text)
        for token in tokens:
            low, stems = _token_keys(token)
            if low in self.idents:
                counts[self.idents[low]] += 1
            counts.update(self.words[s] for s in stems if s in self.words)
        return counts, max(len(tokens), 1)


# --- scoring -------------------------------------------------------------------------------------


def score_units(units: list[Unit], terms: list[Term]) -> list[float]:
    """BM25 over units, strong terms doubled, scaled by how much of the request a unit covers."""
    matcher = Matcher(terms)
    matched = [matcher.counts(u.text) for u in units]
    n = max(len(units), 1)
    avg_len = sum(length for _, length in matched) / n
    df = Counter(term for counts, _ in matched for term in counts)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * (2.0 if t.strong else 1.0) for t in terms}
    total_weight = sum(idf.values()) or 1.0
    if any(t.strong for t in terms) and not any(t.strong and df[t] for t in terms):
        return [0.0] * len(units)  # the request names identifiers this text does not contain
    strong_present = any(t.strong for t in terms)
    return [_score(counts, length, avg_len, idf, total_weight, strong_present) for counts, length in matched]


def _score(
    counts: Counter[Term],
    length: int,
    avg_len: float,
    idf: dict[Term, float],
    total_weight: float,
    strong_present: bool,
) -> float:
    """One unit's score; when the request names identifiers that exist, only units holding one count."""
    if not counts or (strong_present and not any(t.strong for t in counts)):
        return 0.0
    norm = K1 * (1 - B + B * length / max(avg_len, 1e-9))
    bm25 = sum(idf[t] * tf * (K1 + 1) / (tf + norm) for t, tf in counts.items())
    coverage = sum(idf[t] for t in counts) / total_weight
    return bm25 * (0.5 + 0.5 * coverage)


def best_lines(text: str, terms: list[Term], *, budget_bytes: int) -> list[str]:
    """The best-scoring units within the byte budget, returned in document order."""
    units = split_units(text)
    return select(units, score_units(units, terms), terms, budget_bytes=budget_bytes)


def select(units: list[Unit], scores: list[float], terms: list[Term], *, budget_bytes: int) -> list[str]:
    """Greedy by score above a relative threshold, then back into document order."""
    return [text for _, text in select_units(units, scores, terms, budget_bytes=budget_bytes)]


def select_units(
    units: list[Unit], scores: list[float], terms: list[Term], *, budget_bytes: int
) -> list[tuple[Unit, str]]:
    """`select`, each chosen text with the unit it came from (whose line number a citation names)."""
    top = max(scores, default=0.0)
    if top <= 0:
        return []
    ranked = sorted((i for i, s in enumerate(scores) if s >= RELATIVE_THRESHOLD * top), key=lambda i: (-scores[i], i))
    chosen: list[tuple[int, str]] = []
    used = 0
    for i in ranked:
        text = clip_line(units[i].text, terms)
        if chosen and used + len(text.encode()) + 1 > budget_bytes:
            break
        chosen.append((i, text))
        used += len(text.encode()) + 1
    return [(units[i], text) for i, text in sorted(chosen)]


def clip_line(text: str, terms: list[Term], limit: int = MAX_LINE_CHARS) -> str:
    """Long units are cut to a window around their first hit, so the fact survives the cut."""
    if len(text) <= limit:
        return text
    low = text.lower()
    hits = [p for p in (low.find(t.text) for t in terms) if p >= 0]
    start = max(0, min(hits, default=0) - limit // 4)
    window = text[start : start + limit]
    return ("…" if start else "") + window + ("…" if start + limit < len(text) else "")


# --- answers ---------------------------------------------------------------------------------------


def extract_answer(text: str, extract: str, *, budget_bytes: int) -> str:
    """A map answer: the relevant lines, or NO RELEVANT DATA FOUND with what the text holds instead.

    A chunk shown line-numbered (the job asks for evidence) is answered in citations: each relevant
    line as `[L12] text`, the number the chunk showed for it.
    """
    numbered = numbered_chunk(text)
    if numbered is not None:
        return cited_answer(numbered, extract, budget_bytes=budget_bytes)
    terms = query_terms(extract)
    if not terms:
        return overview(text)
    lines = best_lines(text, terms, budget_bytes=budget_bytes)
    return "\n".join(lines) if lines else no_relevant_data(text, [t.surface or t.text for t in terms])


def numbered_chunk(text: str) -> list[Unit] | None:
    """The lines of a chunk numbered as Read numbers them (`{n:>6}\\t{line}`), or None when it is not."""
    lines = text.strip("\n").split("\n")
    matches = [_READ_NUMBERED.match(line) for line in lines]
    if not lines or not all(matches):
        return None
    return [Unit(int(m.group(1)), m.group(2)) for m in matches if m]


def cited_answer(lines: list[Unit], extract: str, *, budget_bytes: int) -> str:
    """The relevant lines of numbered `lines`, each cited with its number; NO RELEVANT DATA FOUND when none is."""
    text = "\n".join(line.text for line in lines)
    terms = query_terms(extract)
    if not terms:
        return overview(text)
    units = [unit for line in lines for unit in split_units(line.text) for unit in [Unit(line.line_no, unit.text)]]
    chosen = select_units(units, score_units(units, terms), terms, budget_bytes=budget_bytes)
    if not chosen:
        return no_relevant_data(text, [t.surface or t.text for t in terms])
    return "\n".join(cite(unit.line_no, shown) for unit, shown in chosen)


def cite(number: int, text: str) -> str:
    """One citation line: the line's number in brackets, then the text quoted from it."""
    return f"[L{number}] {text}"


def merge_chunk_outputs(blocks: list[str], extract: str, *, budget_bytes: int) -> str:
    """A reduce answer: data blocks merged, identical lines once, order kept; all-empty stays empty."""
    data = [b for b in blocks if not b.strip().startswith(NO_RELEVANT_DATA)]
    if not data:
        return _merge_no_data(blocks)
    lines = _dedup(line for block in data for line in block.splitlines())
    text = "\n".join(lines)
    if len(text.encode()) <= budget_bytes:
        return text
    terms = query_terms(extract)
    units = [Unit(i, line) for i, line in enumerate(lines, start=1)]
    return "\n".join(select(units, score_units(units, terms), terms, budget_bytes=budget_bytes) or lines[:20])


def _merge_no_data(blocks: list[str], max_lines: int = 8) -> str:
    """Every chunk found nothing: keep one header and the distinct descriptions (a few of them)."""
    details = _dedup(line for b in blocks for line in b.strip().splitlines()[1:])
    extra = len(details) - max_lines
    tail = [f"({extra} more chunk descriptions omitted)"] if extra > 0 else []
    return "\n".join([NO_RELEVANT_DATA, *details[:max_lines], *tail]).strip()


def _dedup(lines: Iterable[str]) -> list[str]:
    """Drop blank lines and exact repeats (chunk overlap repeats lines), keeping first occurrences."""
    seen: set[str] = set()
    out = []
    for line in lines:
        key = line.rstrip()
        if key.strip() and key not in seen:
            seen.add(key)
            out.append(key)
    return out
