"""Per-job nonces for the final-report wrapper `<ai-agent-NONCE-FINAL format="text">`.

The wrapper is how we tell the model's answer apart from the document it read. A document may
contain text that looks like a wrapper (by accident or as an attack), so the nonce must be
unguessable and never derived from the document: it comes from `secrets`, fresh for every job.
"""

from __future__ import annotations

import re
import secrets

NONCE_BYTES = 8
"""8 random bytes -> 16 hex characters: unguessable, yet short enough not to distract the model."""

WIDEST_NONCE = "0a" * NONCE_BYTES
"""A stand-in nonce as long as a real one that takes the most tokens any real one can: digits and
letters alternating split into one token per character. Prompt sizes measured with it (chunk and
reduce budgets) are the same for every job and never smaller than the real prompt, so two jobs on
the same document plan the same chunks, and an estimate plans what the job will."""

_NONCE_SHAPE = re.compile(r"[A-Za-z0-9_]+")


def new_nonce() -> str:
    """A fresh random nonce (16 lowercase hex characters) for one extraction job."""
    return secrets.token_hex(NONCE_BYTES)


def tag_name(nonce: str) -> str:
    """The wrapper's element name, e.g. `ai-agent-1f2e...-FINAL`."""
    _check(nonce)
    return f"ai-agent-{nonce}-FINAL"


def open_tag(nonce: str) -> str:
    """The exact opening tag the prompts ask for (docs/spec/tool-output.md §Final-report wrapper)."""
    return f'<{tag_name(nonce)} format="text">'


def close_tag(nonce: str) -> str:
    """The exact closing tag (which the parser nevertheless treats as optional)."""
    return f"</{tag_name(nonce)}>"


def wrap(nonce: str, content: str) -> str:
    """`content` inside the wrapper, each tag on its own line, as a well-behaved model writes it."""
    return f"{open_tag(nonce)}\n{content}\n{close_tag(nonce)}"


def _check(nonce: str) -> None:
    """Refuse nonces that could not round-trip through the tag (hyphens, spaces, markup)."""
    if not _NONCE_SHAPE.fullmatch(nonce):
        raise ValueError(f"a nonce must be letters, digits or underscores, got {nonce!r}")
