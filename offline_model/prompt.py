"""Read toolout's own prompts back: sections, nonce, handle, chunk outputs, numbered tool results.

The offline model only understands the prompts `extraction/texts/prompts.py` writes
(docs/spec/tool-output.md §Extractor prompts), so this is the one place that knows their headers.
Parsing is lenient on purpose: a missing section yields None and the server answers with an explanation
instead of failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

HEADERS = (
    "SOURCE TOOL",
    "DOCUMENT STATS",
    "CHUNK INFO",
    "WHAT TO EXTRACT",
    "CHUNK OUTPUTS",
    "OUTPUT FORMAT (required)",
)

_OPEN_TAG = re.compile(r'<ai-agent-([A-Za-z0-9_\-]+?)-FINAL format="text">')
_ANY_TAG = re.compile(r"</?ai-agent-[A-Za-z0-9_\-]+?-FINAL[^>]*>")
_THINK = re.compile(r"<think>.*?</think>", re.S)
_HANDLE = re.compile(r"^\s*-?\s*Handle/filename:\s*(\S+)\s*$", re.M)
_CHUNK_LABEL = re.compile(r"^\s*-{3}\s*chunk\s+\d+\s+of\s+\d+\s*-{3}\s*$", re.M | re.I)
_CHUNK_BEGIN = re.compile(r"^=== BEGIN DOCUMENT CHUNK \d+ of \d+ \[[A-Za-z0-9_]+\] ===[ \t]*\n?", re.M)
_CHUNK_END = re.compile(r"\n?^=== END DOCUMENT CHUNK \d+ of \d+ \[[A-Za-z0-9_]+\] ===[ \t]*$", re.M)
_NUMBERED = re.compile(r"^\s*L?(\d{1,9})\s*([:\-|\t→])\s?(.*)$")


CITE_MARKER = "Cite what you use:"
"""How toolout's user messages open the request for citations (extraction/evidence/citations.py)."""


def asks_citations(messages: list[dict[str, Any]]) -> bool:
    """Whether a user message asks for quotes with line numbers."""
    return any(CITE_MARKER in message_text(m) for m in messages if m.get("role") == "user")


@dataclass(frozen=True)
class NumberedLine:
    """A line of a Read/Grep result; `hit` is False for grep context lines (`12-...`)."""

    number: int
    text: str
    hit: bool


def message_text(message: dict[str, Any]) -> str:
    """The text of a message whose content is a string or a list of OpenAI content parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def system_prompt(messages: list[dict[str, Any]]) -> str:
    """All system (and developer) messages joined; toolout sends exactly one."""
    return "\n".join(message_text(m) for m in messages if m.get("role") in ("system", "developer"))


def section(prompt: str, header: str) -> str | None:
    """The body under `header` up to the next known header (CHUNK OUTPUTS runs to the last one)."""
    match = re.search(rf"^{re.escape(header)}[ \t]*$", prompt, re.M)
    if match is None:
        return None
    body = prompt[match.end() :]
    later = [h for h in HEADERS[HEADERS.index(header) + 1 :]]
    ends = [_last_header(body, h) if header == "CHUNK OUTPUTS" else _first_header(body, h) for h in later]
    end = min((e for e in ends if e is not None), default=len(body))
    return body[:end].strip("\n")


def _first_header(body: str, header: str) -> int | None:
    match = re.search(rf"^{re.escape(header)}[ \t]*$", body, re.M)
    return match.start() if match else None


def _last_header(body: str, header: str) -> int | None:
    """Chunk outputs are model text and may quote a header; the real next header is the last one."""
    matches = list(re.finditer(rf"^{re.escape(header)}[ \t]*$", body, re.M))
    return matches[-1].start() if matches else None


def nonce(prompt: str) -> str | None:
    """The nonce of the wrapper the prompt demands (the last one named: OUTPUT FORMAT comes last)."""
    found = _OPEN_TAG.findall(prompt)
    return found[-1] if found else None


def handle(prompt: str) -> str | None:
    """The read-grep prompt's `Handle/filename:` value, which is what Read/Grep take as `handle`."""
    match = _HANDLE.search(prompt)
    return match.group(1) if match else None


def chunk_text(user_text: str) -> str:
    """The document chunk of a map user message: between its BEGIN and (last) END lines, else all of it.

    The instruction sentence before BEGIN must not be ranked as if it were document text.
    """
    begin = _CHUNK_BEGIN.search(user_text)
    if begin is None:
        return user_text
    ends = list(_CHUNK_END.finditer(user_text, begin.end()))
    return user_text[begin.end() : ends[-1].start() if ends else len(user_text)]


def chunk_blocks(outputs: str) -> list[str]:
    """CHUNK OUTPUTS split at `--- chunk i of n ---` labels, wrappers and think blocks removed."""
    parts = _CHUNK_LABEL.split(outputs)
    blocks = parts[1:] if len(parts) > 1 else parts
    return [strip_wrappers(b).strip() for b in blocks if b.strip()]


def strip_wrappers(text: str) -> str:
    """Chunk outputs may arrive with their wrapper or a think block still on; keep the content."""
    return _ANY_TAG.sub("", _THINK.sub("", text))


def numbered_lines(text: str, handle_name: str | None = None) -> list[NumberedLine]:
    """Lines of a Read/Grep result that carry a line number (`12: x`, `12-x`, `   12\\tx`, `L12: x`)."""
    out = []
    for raw in text.splitlines():
        if handle_name and raw.startswith(f"{handle_name}:"):
            raw = raw[len(handle_name) + 1 :]
        match = _NUMBERED.match(raw)
        if match:
            out.append(NumberedLine(int(match.group(1)), match.group(3), match.group(2) != "-"))
    return out
