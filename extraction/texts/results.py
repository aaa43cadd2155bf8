"""The plain-text results `tool_output` returns to the agent, character for character (docs/spec/tool-output.md).

Plain text, never JSON: the agent's framework would escape JSON a second time. Two headers exist:
ABSTRACT (success) and TOOL_OUTPUT FAILED. "Nothing matched" and "no such handle" are successes:
the extraction ran and the agent learns something it can act on, so they use the ABSTRACT header.
"""

from __future__ import annotations

from extraction.texts.report import NO_RELEVANT_DATA, says_not_found

UNKNOWN_HANDLE_STRATEGY = "none"
"""The STRATEGY shown for an unknown handle: no strategy ran because there was nothing to read."""


def abstract_text(tool_name: str, handle: str, mode_used: str, abstract: str) -> str:
    """The success result: ABSTRACT header, a blank line, then the abstract."""
    return f"ABSTRACT FROM TOOL OUTPUT {tool_name} WITH HANDLE {handle}, STRATEGY:{mode_used}:\n\n{abstract}"


def failed_text(tool_name: str, handle: str, mode_used: str, error: str) -> str:
    """The failure result: TOOL_OUTPUT FAILED header, a blank line, then the error message."""
    return f"TOOL_OUTPUT FAILED FOR {tool_name} WITH HANDLE {handle}, STRATEGY:{mode_used}:\n\n{error}"


def not_found_abstract(extract: str, detail: str) -> str:
    """The abstract body when nothing matched: what was searched for and what the document holds instead.

    `detail` is the model's description of the document; a leading NO RELEVANT DATA FOUND line
    in it (the model repeating the marker) is dropped so the marker appears exactly once.
    """
    description = _without_marker(detail) or "The extractor did not describe what the document contains."
    return f"{NO_RELEVANT_DATA}\n\nSearched for: {extract.strip()}\n\nWhat the document contains instead: {description}"


def unknown_handle_text(handle: str, tool_name: str = "unknown", mode_used: str = UNKNOWN_HANDLE_STRATEGY) -> str:
    """The result for a handle with nothing stored under it: a success telling the agent what to check."""
    body = (
        f"No tool output is stored under handle {handle}. Handles come from the "
        '"Tool output is too large" message that replaced an oversized tool result; '
        "copy the handle exactly from that message (handles belong to the session that created them)."
    )
    return abstract_text(tool_name, handle, mode_used, body)


def _without_marker(detail: str) -> str:
    text = detail.strip()
    if not says_not_found(text):
        return text
    marker_end = text.upper().index(NO_RELEVANT_DATA) + len(NO_RELEVANT_DATA)
    return text[marker_end:].lstrip("*_`:.- \t\n")
