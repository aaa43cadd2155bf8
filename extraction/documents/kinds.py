"""What kind of content an output is, decided once when it is stored: the declared type first, then the bytes.

The kind decides how the output is read: an HTML page (`html`, `xhtml`) gets a readable text view
(`infra.outputs.views`) that chunking, Read/Grep and the token bill use instead of the markup; `binary`
content (images, archives, any bytes that are not UTF-8 text) is never put in a prompt. Sniffing only
looks at the first bytes (`infra.outputs.content.HEAD_BYTES`), so storing stays one streaming pass.
"""

from __future__ import annotations

import codecs
import re
from enum import StrEnum


class ContentKind(StrEnum):
    TEXT = "text"
    JSON = "json"
    HTML = "html"
    XHTML = "xhtml"
    BINARY = "binary"

    @property
    def is_html(self) -> bool:
        return self in (ContentKind.HTML, ContentKind.XHTML)


DECLARED = {
    "text/html": ContentKind.HTML,
    "application/xhtml+xml": ContentKind.XHTML,
}
BINARY_PREFIXES = ("image/", "audio/", "video/", "font/")
BINARY_TYPES = frozenset({"application/zip", "application/gzip", "application/x-tar", "application/pdf"})
SNIFFED = frozenset({"", "text/plain", "application/octet-stream"})
"""Declared types that say nothing about the content (the upload default, a generic stream): sniffed."""

_HTML_START = re.compile(rb"^(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
_XHTML_NS = b"http://www.w3.org/1999/xhtml"
_BOM = b"\xef\xbb\xbf"
_JSON_START = re.compile(rb'(?:\[\s*(?:[\[{"\]\-0-9]|true|false|null|\Z)|\{\s*(?:["}]|\Z))')
"""A JSON array or object as it opens: `[` then a value or `]`, `{` then a key or `}` (or the head ends there).
A bracket alone is not enough: a log line opens with `[Sun Dec 04 04:47:44 2005]`."""


def media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def sniff_kind(content_type: str, head: bytes) -> ContentKind:
    """The kind of a content whose declared type is `content_type` and whose first bytes are `head`."""
    declared = media_type(content_type)
    if declared in DECLARED:
        return DECLARED[declared]
    if declared.startswith(BINARY_PREFIXES) or declared in BINARY_TYPES or not is_text(head):
        return ContentKind.BINARY
    if declared == "application/json" or declared.endswith("+json"):
        return ContentKind.JSON
    if declared in SNIFFED or declared.endswith("+xml") or declared in ("text/xml", "application/xml"):
        return sniffed_markup(head)
    return ContentKind.TEXT


def sniffed_markup(head: bytes) -> ContentKind:
    """HTML by its first tag (`<!DOCTYPE html>`, `<html>`), XHTML by an XML prolog and the XHTML namespace."""
    start = head.removeprefix(_BOM).lstrip()
    if _HTML_START.match(start):
        return ContentKind.XHTML if _XHTML_NS in start else ContentKind.HTML
    if start[:5].lower() == b"<?xml" and _XHTML_NS in start and b"<html" in start.lower():
        return ContentKind.XHTML
    if opens_json(start):
        return ContentKind.JSON
    return ContentKind.TEXT


def opens_json(start: bytes) -> bool:
    """Whether `start` (leading whitespace and BOM removed) begins like a JSON array or object."""
    return _JSON_START.match(start) is not None


def is_text(head: bytes) -> bool:
    """UTF-8 without NUL bytes (a character cut at the end of `head` does not count against it)."""
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True
