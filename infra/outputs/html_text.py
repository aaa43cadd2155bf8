"""HTML to readable Markdown, streamed: the converter behind an HTML output's text view.

The converter is `html-to-markdown` (Rust-backed), chosen by measuring six candidates on real pages
(docs/content-kinds.md has the numbers): the fastest that keeps headings, lists, links and code. It
drops scripts, styles, navigation, headers, footers, forms and permalink anchors (`BOILERPLATE`).

A converter wants a whole document, but a 50 MB page must not be held twice (bytes and text, raw and
converted), so the page is cut into pieces of about `piece_chars` characters, each ending just after a
block-level closing tag (`</p>`, `</div>`, `</li>`, …) outside any `<script>`/`<style>`, and each piece is
converted on its own. A page smaller than one piece (the usual case) is converted whole; on a bigger one,
an element that spans a cut loses only its wrapper there (a list cut in two is still two lists).
"""

from __future__ import annotations

import codecs
import importlib.metadata
import re
from collections.abc import Iterable, Iterator

import html_to_markdown

PIECE_CHARS = 512 << 10
"""Characters converted at a time: past it the page is cut at the next safe place."""

MAX_PIECE_FACTOR = 8
"""A page with no safe place to cut for `MAX_PIECE_FACTOR * piece_chars` is cut anyway (one long script)."""

BOILERPLATE = [
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "[role=navigation]",
    "[role=search]",
    "[role=banner]",
    "[role=contentinfo]",
    "a.headerlink",
    ".sphinxsidebar",
    ".related",
]
"""What is not the page's text: navigation and furniture (`.sphinxsidebar`, `.related`: Sphinx's, the most
common generator of the long documentation pages agents fetch)."""

OPTIONS = html_to_markdown.ConversionOptions(extract_metadata=False, exclude_selectors=BOILERPLATE, skip_images=True)

_BLOCK_END = re.compile(
    r"</(?:p|div|section|article|main|li|ul|ol|dl|dd|dt|table|tr|pre|blockquote|h[1-6])\s*>", re.IGNORECASE
)
_LINK_TITLE = re.compile(r"""(<a\b[^>]*?)\s+title=(?:"[^"]*"|'[^']*')""", re.IGNORECASE)
"""A link's tooltip: not visible text, and Sphinx gives every cross-reference one (4 % of a page's tokens)."""
_RAW_OPEN = re.compile(r"<(script|style)[\s>]", re.IGNORECASE)
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
"""C0 control characters other than HTML's whitespace: never visible text, and a piece dense with them is
refused whole by the converter as "binary data", which would cost the page its text view."""


def converter_name() -> str:
    return f"html-to-markdown {importlib.metadata.version('html-to-markdown')}"


def to_markdown(html: str) -> str:
    """One document or piece as Markdown, links without their tooltips and the text without control characters
    (what the converter cannot parse is an error for the caller)."""
    readable = _LINK_TITLE.sub(r"\1", _CONTROLS.sub("", html))
    return str(html_to_markdown.convert(readable, OPTIONS).content)


def markdown_blocks(blocks: Iterable[bytes], *, piece_chars: int = PIECE_CHARS) -> Iterator[bytes]:
    """The Markdown of the HTML given as UTF-8 `blocks` (invalid bytes replaced), in pieces, as UTF-8."""
    pending = ""
    for text in decoded(blocks, piece_chars):
        pending += text
        while len(pending) >= piece_chars and (cut := safe_cut(pending, piece_chars)) is not None:
            yield piece_markdown(pending[:cut])
            pending = pending[cut:]
    if pending.strip():
        yield piece_markdown(pending)


def decoded(blocks: Iterable[bytes], size: int) -> Iterator[str]:
    """The text of `blocks`, at most `size` bytes at a time: an 8 MB block is never one 8-32 MB string."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    for block in blocks:
        for start in range(0, len(block), size):
            yield decoder.decode(block[start : start + size])
    yield decoder.decode(b"", final=True)


def piece_markdown(piece: str) -> bytes:
    text = to_markdown(piece).strip("\n")
    return f"{text}\n\n".encode() if text else b""


def safe_cut(text: str, piece_chars: int) -> int | None:
    """Where to end the next piece: after the last block closing tag (within the first `piece_chars`, else
    anywhere) outside a script or style; None to wait for more — unless `text` is `MAX_PIECE_FACTOR` pieces
    long already: then it is cut where it ends."""
    for window in (min(len(text), piece_chars), len(text)):
        for match in reversed(list(_BLOCK_END.finditer(text, 0, window))):
            if not in_raw_text(text, match.start()):
                return match.end()
    return len(text) if len(text) >= MAX_PIECE_FACTOR * piece_chars else None


def in_raw_text(text: str, position: int) -> bool:
    """Whether `position` is inside a `<script>` or `<style>` element (its last opening is not closed yet)."""
    opened = None
    for match in _RAW_OPEN.finditer(text, 0, position):
        opened = match
    if opened is None:
        return False
    closing = re.compile(f"</{opened.group(1)}", re.IGNORECASE)
    return closing.search(text, opened.end(), position) is None
