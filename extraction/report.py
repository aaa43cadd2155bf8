"""A lenient parser for the model's final report `<ai-agent-NONCE-FINAL format="text"> ... `.

Models are sloppy with the wrapper: they think first (`<think>...</think>`, sometimes never
closed), chat before the tag, put the tag in a code fence, quote the attribute differently, or
stop before the closing tag (which seed 002 decision 6 makes optional). All of that is accepted.

What is never accepted is a wrapper whose nonce differs from the job's: the document the model
read may contain a forged wrapper, and it must not become the answer. When a model quotes a
forged wrapper and then writes the real one, the real one wins; of several real wrappers, the
last with content wins (models draft, then correct). Wrappers mentioned inside a closed think
block do not count. An unclosed think block cannot be told apart from the answer, so its opening
tag is treated as plain text and the last-real-wrapper rule decides.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from extraction.errors import ReportParseError
from extraction.nonce import close_tag, open_tag

NO_RELEVANT_DATA = "NO RELEVANT DATA FOUND"

_OPEN = re.compile(r"<\s*ai-agent-(?P<nonce>[^\s<>]+?)-FINAL(?=[\s>/])[^<>]*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*ai-agent-(?P<nonce>[^\s<>]+?)-FINAL\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<\s*(?P<name>think|thinking)(?:\s[^<>]*)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*(?P<name>think|thinking)\s*>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^[ \t]*```[\w+.-]*[ \t]*$", re.MULTILINE)
_NOT_FOUND = re.compile(r"^[\s*_#>`-]*" + re.escape(NO_RELEVANT_DATA), re.IGNORECASE)

Span = tuple[int, int]


class FinalReport(BaseModel):
    """The model's answer: `found` is False when it says NO RELEVANT DATA FOUND (a success, not an error)."""

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
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    opens = [match for match in _OPEN.finditer(text) if _is_ours(match, nonce)]
    thinking = think_spans(text, nonce)
    visible = [match for match in opens if not _inside(match.start(), thinking)]
    if not visible:
        return ReportFailure(reason=_why_missing(text, nonce, opens))
    for opener in reversed(visible):
        report = _report_after(text, opener, nonce)
        if report.content:
            return report
    return ReportFailure(reason=f"the final-report wrapper {open_tag(nonce)} is empty")


def says_not_found(content: str) -> bool:
    """True when the content starts with NO RELEVANT DATA FOUND (markdown emphasis tolerated)."""
    return _NOT_FOUND.match(content) is not None


# ---------------------------------------------------------------- think blocks


def think_spans(text: str, nonce: str) -> list[Span]:
    """Character spans of closed think blocks, plus a leading reasoning run ended by a stray `</think>`.

    Chat templates that pre-fill `<think>` make the reply start with bare reasoning and a lone
    closing tag; everything before it is thinking, unless that tag sits inside a real wrapper.
    """
    spans: list[Span] = []
    position = 0
    stray_close = _leading_stray_close(text, nonce)
    if stray_close is not None:
        spans.append((0, stray_close))
        position = stray_close
    while (opener := _THINK_OPEN.search(text, position)) is not None:
        closer = _matching_think_close(text, opener)
        if closer is None:  # unclosed: cannot tell where thinking ends, so treat the tag as text
            position = opener.end()
            continue
        spans.append((opener.start(), closer))
        position = closer
    return spans


def _matching_think_close(text: str, opener: re.Match[str]) -> int | None:
    name = opener.group("name").lower()
    for closer in _THINK_CLOSE.finditer(text, opener.end()):
        if closer.group("name").lower() == name:
            return closer.end()
    return None


def _leading_stray_close(text: str, nonce: str) -> int | None:
    closer = _THINK_CLOSE.search(text)
    if closer is None:
        return None
    opener = _THINK_OPEN.search(text)
    if opener is not None and opener.start() < closer.start():
        return None
    if _inside_closed_wrapper(text, closer.start(), nonce):
        return None
    return closer.end()


def _inside_closed_wrapper(text: str, position: int, nonce: str) -> bool:
    for opener in _OPEN.finditer(text, 0, position):
        if not _is_ours(opener, nonce):
            continue
        closer = _find_close(text, opener.end(), nonce)
        if closer is not None and closer.start() >= position:
            return True
    return False


def _inside(position: int, spans: list[Span]) -> bool:
    return any(start <= position < end for start, end in spans)


# ---------------------------------------------------------------- the wrapper's content


def _is_ours(match: re.Match[str], nonce: str) -> bool:
    return match.group("nonce").lower() == nonce.lower()


def _find_close(text: str, start: int, nonce: str) -> re.Match[str] | None:
    for closer in _CLOSE.finditer(text, start):
        if _is_ours(closer, nonce):
            return closer
    return None


def _report_after(text: str, opener: re.Match[str], nonce: str) -> FinalReport:
    closer = _find_close(text, opener.end(), nonce)
    if closer is None:
        raw = _drop_partial_close(text[opener.end():], nonce)
    else:
        raw = text[opener.end(): closer.start()]
    content = clean_content(raw)
    return FinalReport(content=content, found=not says_not_found(content), closed=closer is not None)


def clean_content(raw: str) -> str:
    """Strip whitespace, a leading think block, and a code fence left unbalanced by the wrapper."""
    content = _drop_leading_think(raw.strip())
    fences = list(_FENCE_LINE.finditer(content))
    if len(fences) % 2 == 1:
        last, first = fences[-1], fences[0]
        if not content[last.end():].strip():
            content = content[: last.start()]
        elif not content[: first.start()].strip():
            content = content[first.end():]
    return content.strip()


def _drop_leading_think(content: str) -> str:
    opener = _THINK_OPEN.match(content)
    if opener is None:
        return content
    closer = _matching_think_close(content, opener)
    return content if closer is None else content[closer:].strip()


def _drop_partial_close(raw: str, nonce: str) -> str:
    """Cut a closing tag the model began but never finished (output cut off by max_tokens)."""
    cut = raw.rfind("<")
    if cut == -1:
        return raw
    tail = re.sub(r"\s+", "", raw[cut:]).lower()
    return raw[:cut] if len(tail) >= 2 and close_tag(nonce).lower().startswith(tail) else raw


# ---------------------------------------------------------------- failure reasons


def _why_missing(text: str, nonce: str, ours: list[re.Match[str]]) -> str:
    expected = open_tag(nonce)
    if ours:
        return f"the final-report wrapper {expected} appeared only inside a think block"
    foreign = sorted({match.group("nonce") for match in _OPEN.finditer(text) if not _is_ours(match, nonce)})
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        return (
            f"only final-report wrappers with a foreign nonce were found ({shown}); they are ignored "
            f"because they may come from the document, not the model; expected {expected}"
        )
    if _find_close(text, 0, nonce) is not None:
        return f"found the closing tag {close_tag(nonce)} but no opening tag {expected}"
    return f"no final-report wrapper {expected} in the reply"
