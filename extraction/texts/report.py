"""A lenient parser for the model's final report `<ai-agent-NONCE-FINAL format="text"> ... `.

Models are sloppy with the wrapper: they think first (`<think>...</think>`, sometimes never
closed), chat before the tag, put the tag in a code fence, quote the attribute differently, or
stop before the closing tag (optional: docs/spec/tool-output.md §Final-report wrapper). All of that is accepted.

What is never accepted is a wrapper whose nonce differs from the job's: the document the model
read may contain a forged wrapper, and it must not become the answer. When a model quotes a
forged wrapper and then writes the real one, the real one wins; of several real wrappers, the
last with content wins (models draft, then correct). A real wrapper with nothing inside is an
answer too, an empty one: the model ran and had nothing to report (for a map chunk, "nothing
relevant here"), so it is `found=False` with empty content, not a failure to be retried.
Wrappers mentioned inside a closed think block do not count. An unclosed think block cannot be
told apart from the answer, so its opening tag is treated as plain text and the last-real-wrapper
rule decides.

Every tag is found in one regex pass and later lookups bisect, so a reply stuffed with
thousands of tags (a model echoing a hostile document) still parses in linear time.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from pydantic import BaseModel

from extraction.errors import ReportParseError
from extraction.texts.nonce import close_tag, open_tag

NO_RELEVANT_DATA = "NO RELEVANT DATA FOUND"

_OPEN = re.compile(r"<\s*ai-agent-(?P<nonce>[^\s<>]+?)-FINAL(?=[\s>/])[^<>]*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*ai-agent-(?P<nonce>[^\s<>]+?)-FINAL\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<\s*(?P<name>think|thinking)(?:\s[^<>]*)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*(?P<name>think|thinking)\s*>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.-]*[ \t]*$", re.MULTILINE)
_NOT_FOUND = re.compile(r"^[\s*_#>`-]*" + re.escape(NO_RELEVANT_DATA), re.IGNORECASE)

Span = tuple[int, int]


class FinalReport(BaseModel):
    """The model's answer: `found` is False when it says NO RELEVANT DATA FOUND or is empty (a success, not an
    error)."""

    content: str
    found: bool
    closed: bool


class ReportFailure(BaseModel):
    """Why a reply carried no usable final report (the strategy then failed and may fall back)."""

    reason: str

    def to_error(self) -> ReportParseError:
        return ReportParseError(self.reason)


def parse_final_report(text: str | None, nonce: str) -> FinalReport | ReportFailure:
    """Find the job's final report in a model reply, or say precisely why there is none."""
    if text is None or not text.strip():
        return ReportFailure(reason="the reply was empty")
    tags = _Tags(text.replace("\r\n", "\n").replace("\r", "\n"), nonce)
    thinking = tags.think_spans()
    thinking_starts = [start for start, _ in thinking]
    visible = [opener for opener in tags.opens if not _inside(opener.start(), thinking, thinking_starts)]
    if not visible:
        return ReportFailure(reason=_why_missing(tags))
    last = _report_after(tags, visible[-1])
    if last.content:
        return last
    earlier = (_report_after(tags, opener) for opener in reversed(visible[:-1]))  # lazily: the last with content
    return next((report for report in earlier if report.content), last)


def says_not_found(content: str) -> bool:
    """True when the content starts with NO RELEVANT DATA FOUND (markdown emphasis tolerated)."""
    return _NOT_FOUND.match(content) is not None


# ---------------------------------------------------------------- the tags of one reply


class _Tags:
    """Every wrapper and think tag of a reply, found once; `*_after` lookups bisect."""

    def __init__(self, text: str, nonce: str) -> None:
        self.text, self.nonce = text, nonce
        self.opens = [match for match in _OPEN.finditer(text) if _same_nonce(match, nonce)]
        self.closes = [match for match in _CLOSE.finditer(text) if _same_nonce(match, nonce)]
        self._close_starts = [match.start() for match in self.closes]
        self._open_starts = [match.start() for match in self.opens]
        self.think_opens = list(_THINK_OPEN.finditer(text))
        self.think_closes = list(_THINK_CLOSE.finditer(text))
        self._think_close_ends = {
            name: [m.end() for m in self.think_closes if m.group("name").lower() == name]
            for name in ("think", "thinking")
        }

    def close_after(self, position: int) -> re.Match[str] | None:
        """Our first closing tag starting at or after `position`."""
        slot = bisect_left(self._close_starts, position)
        return self.closes[slot] if slot < len(self.closes) else None

    def open_after(self, position: int) -> int | None:
        """Start of our first opening tag at or after `position`."""
        slot = bisect_left(self._open_starts, position)
        return self._open_starts[slot] if slot < len(self._open_starts) else None

    def think_close_after(self, opener: re.Match[str]) -> int | None:
        """End of the first closing tag of the same think element after `opener`."""
        ends = self._think_close_ends[opener.group("name").lower()]
        slot = bisect_right(ends, opener.end())  # tags never overlap, so this close starts after the opener
        return ends[slot] if slot < len(ends) else None

    def think_spans(self) -> list[Span]:
        """Closed think blocks, plus a leading reasoning run ended by a stray `</think>`.

        Chat templates that pre-fill `<think>` make the reply start with bare reasoning and a lone
        closing tag; everything before it is thinking, unless that tag sits inside a real wrapper.
        """
        spans: list[Span] = []
        position = self._leading_stray_close()
        if position:
            spans.append((0, position))
        for opener in self.think_opens:
            if opener.start() < position:
                continue
            closer = self.think_close_after(opener)
            if closer is not None:  # an unclosed opener is left as plain text
                spans.append((opener.start(), closer))
                position = closer
        return spans

    def _leading_stray_close(self) -> int:
        if not self.think_closes:
            return 0
        closer = self.think_closes[0]
        if self.think_opens and self.think_opens[0].start() < closer.start():
            return 0
        return 0 if self._inside_closed_wrapper(closer.start()) else closer.end()

    def _inside_closed_wrapper(self, position: int) -> bool:
        """Whether our last opening tag before `position` is closed only after it."""
        before = [opener for opener in self.opens if opener.start() < position]
        closer = self.close_after(before[-1].end()) if before else None
        return closer is not None and closer.start() >= position


def _same_nonce(match: re.Match[str], nonce: str) -> bool:
    return match.group("nonce").lower() == nonce.lower()


def _inside(position: int, spans: list[Span], starts: list[int]) -> bool:
    """Whether `position` falls in one of the sorted, disjoint `spans` (whose `starts` are given)."""
    slot = bisect_right(starts, position) - 1
    return slot >= 0 and position < spans[slot][1]


# ---------------------------------------------------------------- the wrapper's content


def _report_after(tags: _Tags, opener: re.Match[str]) -> FinalReport:
    """The content after `opener`, up to our closing tag, else our next opening tag, else the end."""
    closer = tags.close_after(opener.end())
    next_open = tags.open_after(opener.end())
    if closer is not None and (next_open is None or closer.start() < next_open):
        raw = tags.text[opener.end() : closer.start()]
    else:
        closer = None
        end = len(tags.text) if next_open is None else next_open
        raw = _drop_partial_close(tags.text[opener.end() : end], tags.nonce)
    content = clean_content(raw)
    return FinalReport(content=content, found=bool(content) and not says_not_found(content), closed=closer is not None)


def clean_content(raw: str) -> str:
    """Strip whitespace, a leading think block, and a code fence left unbalanced by the wrapper."""
    content = _drop_leading_think(raw.strip())
    fences = list(_FENCE_LINE.finditer(content))
    if len(fences) % 2 == 1:
        last, first = fences[-1], fences[0]
        if not content[last.end() :].strip():
            content = content[: last.start()]
        elif not content[: first.start()].strip():
            content = content[first.end() :]
    return content.strip()


def _drop_leading_think(content: str) -> str:
    opener = _THINK_OPEN.match(content)
    if opener is None:
        return content
    name = re.escape(opener.group("name"))
    closer = re.compile(rf"<\s*/\s*{name}\s*>", re.IGNORECASE).search(content, opener.end())
    return content if closer is None else content[closer.end() :].strip()


def _drop_partial_close(raw: str, nonce: str) -> str:
    """Cut a closing tag the model began but never finished (output cut off by max_tokens)."""
    cut = raw.rfind("<")
    if cut == -1:
        return raw
    tail = re.sub(r"\s+", "", raw[cut:]).lower()
    return raw[:cut] if len(tail) >= 2 and close_tag(nonce).lower().startswith(tail) else raw


# ---------------------------------------------------------------- failure reasons


def _why_missing(tags: _Tags) -> str:
    expected = open_tag(tags.nonce)
    if tags.opens:
        return f"the final-report wrapper {expected} appeared only inside a think block"
    foreign = sorted({m.group("nonce") for m in _OPEN.finditer(tags.text) if not _same_nonce(m, tags.nonce)})
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        return (
            f"only final-report wrappers with a foreign nonce were found ({shown}); they are ignored "
            f"because they may come from the document, not the model; expected {expected}"
        )
    if tags.closes:
        return f"found the closing tag {close_tag(tags.nonce)} but no opening tag {expected}"
    return f"no final-report wrapper {expected} in the reply"
