"""Sessions and stored-output records: who owns what, and what is known of each stored output."""

from __future__ import annotations

import time
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from extraction.documents.stats import DocumentStats
from extraction.errors import NotFound
from infra.redis.slots import draw_id

DEFAULT_TENANT = "dev"


class SessionRecord(BaseModel):
    """One agent session: the unit of ownership and cleanup."""

    id: str
    tenant: str = DEFAULT_TENANT
    created_at: float
    last_used_at: float
    expires_at: float | None = Field(
        None, description="when the session and everything in it is deleted (unix seconds); None: only when idle"
    )


class Space(StrEnum):
    """The two alias spaces of a session: variable names (`$name`, buffers) and file paths (`file:PATH`)."""

    VARIABLE = "variable"
    FILE = "file"


class TextView(BaseModel):
    """The readable text (Markdown) of an HTML output, derived once when it is stored (`infra.outputs.views`).

    It has its own blob and its own token and line indexes, like the raw content; chunking, Read/Grep and
    the token bill read it instead of the markup. Small views live in `inline`, as small outputs do.
    """

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    converter: str = Field(description="what derived it, with its version: html-to-markdown 3.19.0")
    source_sha256: str = Field(description="the raw content it was derived from")
    stats: DocumentStats
    blob_key: str
    index_key: str
    lines_key: str | None = None
    chars: int | None = None
    inline: bytes | None = None
    seconds: float = Field(0.0, ge=0, description="how long deriving it took")


class Redaction(BaseModel):
    """The output as models are shown it: every credential replaced by `[REDACTED:<kind>]`
    (`infra.outputs.redacted`). Present only when the store found one; the stored bytes stay as uploaded."""

    ruleset: str = Field(description="the rule set that found them (infra.privacy.rules.RULESET)")
    counts: dict[str, int] = Field(description="secrets replaced, by kind")
    view: TextView = Field(description="the redacted content (an HTML output's: its text view, redacted)")


class OutputRecord(BaseModel):
    """What we know of one stored tool output (one version of a variable or file).

    The bytes live in the blob store under `blob_key`, or, for a small output, in `inline` (no blob
    is written then: `infra.outputs.content` reads either form). A version never changes once stored: an
    append or a replace writes a new version under a new handle and moves the alias (`name` or
    `path`) to it; `created_at` is the variable's (kept across versions), `updated_at` this version's.
    """

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    handle: str
    session_id: str
    tenant: str = DEFAULT_TENANT
    tool_name: str = "unknown"
    tool_args: str = "{}"
    content_type: str = "text/plain"
    stats: DocumentStats
    blob_key: str
    index_key: str
    lines_key: str | None = None
    created_at: float = Field(default_factory=time.time)
    updated_at: float | None = Field(None, description="when this version was written; None: = created_at")
    name: str | None = Field(None, description="the variable name this version was written under")
    path: str | None = Field(None, description="the session file path this version was written under")
    source: str | None = Field(None, description='the tool name, "input" or "export"; None: the tool name')
    chars: int | None = Field(None, ge=0, description="characters (UTF-8); None for outputs stored before")
    preview: str = ""
    parts: int = Field(1, ge=1, description="uploads appended into this version; more than one: the content is text")
    inline: bytes | None = Field(None, description="the content itself when small (then no blob exists)")
    kind: str = Field("text", description="text, json, html, xhtml or binary (extraction.documents.kinds)")
    text_view: TextView | None = Field(None, description="an HTML output's readable text, read instead of it")
    expires_at: float | None = Field(
        None, description="when this output and all derived from it is deleted (unix seconds); None: with its session"
    )
    redaction: Redaction | None = Field(None, description="the content with its secrets replaced, read by models")

    @property
    def written_at(self) -> float:
        return self.updated_at if self.updated_at is not None else self.created_at

    @property
    def origin(self) -> str:
        return self.source or self.tool_name

    def alias(self, space: Space) -> str | None:
        """The name or path this version was written under, in `space`."""
        return self.name if space is Space.VARIABLE else self.path


def expired(expires_at: float | None, now: float) -> bool:
    """Whether a retention deadline has passed: an expired session or output reads as gone before the sweep."""
    return expires_at is not None and expires_at <= now


def blob_key(session_id: str, handle: str) -> str:
    """Where the raw output lives: `sessions/<session>/<handle>`."""
    return f"sessions/{session_id}/{handle}"


def session_prefix(session_id: str) -> str:
    return f"sessions/{session_id}/"


def new_id() -> str:
    """Session ids, handles and job ids are random UUID4s (unguessable, valid blob-key segments), drawn so their keys
    land on one of the 256 slots that hold the per-slot index copies (`infra.redis.slots.draw_id`)."""
    return draw_id()


def session_not_found(session_id: str) -> NotFound:
    return NotFound(f"no session {session_id!r}", session_id=session_id)


def output_not_found(handle: str) -> NotFound:
    return NotFound(f"no stored output with handle {handle!r}", handle=handle)
