"""Request and response bodies of the HTTP API (what `/docs` shows).

Views are built from the `infra` records rather than returning them as they are, so storage fields
the client must not see (a job's nonce, blob keys) never leak, and every view carries `links` the
client can follow instead of building URLs itself.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model

from api.costs import OutputUsage
from extraction.strategies.routing import Mode
from infra.planning.estimates import ExtractionEstimate
from infra.privacy.policy import redacting
from infra.settings import Settings
from infra.stores.jobs import JobRecord, new_job
from infra.stores.records import OutputRecord, SessionRecord

Links = dict[str, str]
StorePolicy = Literal["always", "if_oversized"]


# --- sessions ---------------------------------------------------------------------------------
class SessionView(BaseModel):
    id: str
    tenant: str
    created_at: float
    last_used_at: float
    expires_at: float = Field(description="when the session is swept: if it stays idle, or at its TTL if sooner")
    ttl_expires_at: float | None = Field(
        None, description="the deadline its TTL set (deleted then even if in use); None: it asked none"
    )
    outputs: list[str] = Field(default_factory=list, description="handles stored in the session")
    links: Links


def session_view(record: SessionRecord, *, ttl_seconds: int, outputs: list[str] | None = None) -> SessionView:
    base = f"/v1/sessions/{record.id}"
    idle_until = record.last_used_at + ttl_seconds
    return SessionView(
        **record.model_dump(exclude={"expires_at"}),
        expires_at=idle_until if record.expires_at is None else min(idle_until, record.expires_at),
        ttl_expires_at=record.expires_at,
        outputs=outputs or [],
        links={
            "self": base,
            "outputs": f"{base}/outputs",
            "extractions": f"{base}/extractions",
            "usage": f"{base}/usage",
        },
    )


# --- outputs ----------------------------------------------------------------------------------
class StatsView(BaseModel):
    """The document statistics, flattened into the upload and metadata answers."""

    bytes: int
    lines: int
    tokens: int
    avg_line_bytes: float
    sha256: str
    invalid_utf8: Any = Field(description="whether (or how often) the bytes are not valid UTF-8")
    encoding: str = Field(description="the tokenizer encoding `tokens` was counted with")
    kind: str = Field("text", description="text, json, html, xhtml or binary: sniffed when stored")
    text_view: TextViewStats | None = Field(
        None, description="an HTML output's text view (what jobs, Read and Grep read): its size and tokens"
    )
    redaction: RedactionStats | None = Field(
        None, description="the secrets found when it was stored: what models read instead (docs/privacy.md)"
    )


class TextViewStats(BaseModel):
    """The readable text (Markdown) derived from an HTML output, measured like the output itself."""

    bytes: int
    lines: int
    tokens: int
    converter: str
    derive_seconds: float


class RedactionStats(BaseModel):
    """The redacted view: what every model reads of an output that holds secrets (`/content?redacted=true`)."""

    counts: dict[str, int] = Field(description="secrets replaced by [REDACTED:<kind>], by kind")
    ruleset: str
    bytes: int = Field(description="the redacted view's size")
    tokens: int


def kind_fields(record: OutputRecord) -> dict[str, Any]:
    """What `StatsView` adds to the stats: the kind, the text view's and the redacted view's stats."""
    return {"kind": record.kind, "text_view": text_view_stats(record), "redaction": redaction_stats(record)}


def text_view_stats(record: OutputRecord) -> TextViewStats | None:
    view = record.text_view
    if view is None:
        return None
    stats = view.stats
    return TextViewStats(
        bytes=stats.bytes, lines=stats.lines, tokens=stats.tokens, converter=view.converter, derive_seconds=view.seconds
    )


def redaction_stats(record: OutputRecord) -> RedactionStats | None:
    redaction = record.redaction
    if redaction is None:
        return None
    stats = redaction.view.stats
    return RedactionStats(counts=redaction.counts, ruleset=redaction.ruleset, bytes=stats.bytes, tokens=stats.tokens)


class UploadResult(StatsView):
    """A stored output: the handle to extract from, and the exact too-large text to show the model."""

    stored: Literal[True] = True
    handle: str
    session_id: str
    oversized: bool
    message: str | None = Field(description="too-large text when oversized: give it to the model as the tool result")
    name: str | None = Field(description="the variable the output is saved as: `$name` resolves to it")
    links: Links


class InlineResult(StatsView):
    """`store=if_oversized` and the output fits: nothing stored, the content comes straight back."""

    stored: Literal[False] = False
    oversized: Literal[False] = False
    content: str
    name: None = Field(None, description="null: nothing was stored, so there is no variable")


class RoutedResult(BaseModel):
    """An upload with `output=variable:…|file:…|discard`: where it went, and the manifest the model sees instead."""

    routed: Literal[True] = True
    destination: str = Field(description="as finally written: variable:foo_2 (write_mode=new), file:results/2026-01-01")
    name: str | None
    path: str | None
    handle: str | None = Field(description="the version now stored there (null for discard)")
    chars: int = Field(description="characters of this upload")
    bytes: int = Field(description="bytes of this upload")
    manifest: str = Field(description="[tool output routed] <tool> -> <destination> (total N chars)")


class OutputView(StatsView):
    handle: str
    session_id: str
    tool_name: str
    tool_args: str = Field(description="the tool's arguments, verbatim JSON")
    content_type: str
    created_at: float
    expires_at: float | None = Field(
        None, description="when it is deleted with all derived from it (its TTL or its session's); None: when idle"
    )
    usage: OutputUsage | None = Field(None, description="what extracting from it has cost (GET of one output)")
    links: Links


def output_links(handle: str, session_id: str) -> Links:
    base = f"/v1/outputs/{handle}"
    return {
        "self": base,
        "content": f"{base}/content",
        "lines": f"{base}/lines",
        "grep": f"{base}/grep",
        "usage": f"{base}/usage",
        "session": f"/v1/sessions/{session_id}",
    }


# --- lines (Read / Grep) ----------------------------------------------------------------------
class ReadView(BaseModel):
    """`GET /v1/outputs/{handle}/lines` as JSON: the rendered window plus where it sits in the output."""

    text: str = Field(description="the numbered lines, `{n:>6}\\t{line}` joined by newlines (empty past the end)")
    first_line: int
    last_line: int = Field(description="smaller than first_line when the window is empty")
    total_lines: int
    truncated: bool = Field(description="more lines follow the window")
    clipped_lines: int = Field(0, description="lines in the window cut at the per-line character limit")
    note: str | None = Field(
        description="what the agent should know beyond the lines (paging hint, past the end, clipping)"
    )
    view: Literal["text", "raw"] = Field(
        "raw", description="text: line numbers refer to an HTML output's text view (Markdown); raw: to its bytes"
    )


class GrepView(BaseModel):
    """`GET /v1/outputs/{handle}/grep` as JSON: grep -n style lines plus counts."""

    text: str = Field(description="`{n:>6}:\\t{line}` for a match, `{n:>6}-\\t{line}` for context, `--` between groups")
    matches: int = Field(description="matching lines (not occurrences)")
    lines_scanned: int
    truncated: bool = Field(description="stopped at max_matches or the time budget; later lines were not searched")
    note: str | None
    view: Literal["text", "raw"] = Field(
        "raw", description="text: line numbers refer to an HTML output's text view (Markdown); raw: to its bytes"
    )
    stopped_after_seconds: float | None = Field(
        None, description="set when the grep time budget ran out: searched lines_scanned lines in this long"
    )


def output_view(record: OutputRecord) -> OutputView:
    return OutputView(
        **record.stats.model_dump(),
        **kind_fields(record),
        handle=record.handle,
        session_id=record.session_id,
        tool_name=record.tool_name,
        tool_args=record.tool_args,
        content_type=record.content_type,
        created_at=record.created_at,
        expires_at=record.expires_at,
        links=output_links(record.handle, record.session_id),
    )


# --- extractions ------------------------------------------------------------------------------
class ExtractionRequest(BaseModel):
    """The `tool_output` call (docs/spec/tool-output.md), sent as the JSON body. Length is checked per settings."""

    model_config = ConfigDict(extra="forbid")

    handle: uuid.UUID = Field(description="UUID handle from the too-large message")
    extract: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        description="precise instructions about what to extract (blank is refused)"
    )
    mode: Mode = Field(Mode.AUTO, description="auto | full-chunked | read-grep | truncate | query")
    view: Literal["text", "raw"] = Field(
        "text", description="an HTML output: read its text view (Markdown, the default) or the raw markup"
    )
    redact: bool | None = Field(
        None,
        description="false: the job reads the output with its secrets (needs redact_reason, which is logged); "
        "default: redacted unless the tenant is exempt",
    )
    redact_reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=500)] | None = Field(
        None, description="why a model may see this output's secrets (with redact: false)"
    )
    cache: bool = Field(
        True,
        description="false: run it even if an identical extraction already succeeded (its answer is cached as usual)",
    )
    hedge: bool = Field(
        True,
        description="false: never send a hedge copy of this job's slow model calls (TOOLOUT_HEDGE_ENABLED=false "
        "turns hedging off for every job)",
    )
    max_input_tokens: int | None = Field(
        None, ge=1, description="refuse (422, the estimate in details) when the estimate needs more input tokens"
    )
    max_cost_usd: float | None = Field(
        None, ge=0, description="refuse (422) when the estimated cost is higher, or unknown (an unpriced model)"
    )
    callback_url: Annotated[str, StringConstraints(max_length=2048)] | None = Field(
        None, description="http(s) URL the finished job is POSTed to, signed (see GET /v1/webhooks/secret)"
    )
    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=256)] | None = Field(
        None,
        description="the litellm model every stage of this job calls, one of the deployment's allowed models "
        "(TOOLOUT_ALLOWED_MODELS; any other is refused with 422 model_not_allowed); default: each stage's own",
    )

    def redacting(self, settings: Settings, tenant: str) -> bool:
        return redacting(settings.unredacted_tenants, tenant, self.redact, self.redact_reason)

    def job_on(self, output: OutputRecord, settings: Settings) -> JobRecord:
        """The job this request asks for on `output` (not stored yet): whether it runs or is answered from cache."""
        redact = self.redacting(settings, output.tenant)
        counts = output.redaction.counts if redact and output.redaction is not None else {}
        job = new_job(
            output,
            self.extract,
            self.mode,
            model=self.model or settings.model,
            callback_url=self.callback_url,
            stage_models=settings.stage_models(self.model),
        ).model_copy(update={"view": self.view, "redact": redact, "redactions": counts})
        job.hedge = self.hedge and settings.hedge_enabled
        return job


class WebhookSecret(BaseModel):
    """The tenant's webhook signing secret and how to check a delivery with it."""

    secret: str = Field(description="HMAC-SHA256 key for the X-Toolout-Signature header")
    header: str = Field(description="the signature header's name")
    scheme: str = Field(description="how the signature is computed")


_JOB_FIELDS: dict[str, Any] = {
    name: (field.annotation, field) for name, field in JobRecord.model_fields.items() if name != "nonce"
}

JobView = create_model(
    "JobView",
    __doc__="An extraction job as clients see it: the job record without its nonce, plus links.",
    **_JOB_FIELDS,
    links=(Links, ...),
)


def job_view(record: JobRecord) -> Any:
    links = {
        "self": f"/v1/extractions/{record.id}",
        "cancel": f"/v1/extractions/{record.id}/cancel",
        "output": f"/v1/outputs/{record.handle}",
        "trace": f"/v1/extractions/{record.id}/trace",
        "events": f"/v1/extractions/{record.id}/events",
    }
    return JobView(**record.model_dump(exclude={"nonce"}), links=links)


class EstimateView(ExtractionEstimate):
    """`POST /v1/extractions/estimate`: what the job would do and cost; nothing is run or stored."""

    cached: bool = Field(
        description="the same request (with cache on) would be answered at once from an earlier job, for nothing"
    )
    cached_from: str | None = Field(None, description="that earlier job")


class JobList(BaseModel):
    items: list[JobView]


# --- health -----------------------------------------------------------------------------------
class Check(BaseModel):
    ok: bool
    detail: str


class Readiness(BaseModel):
    status: Literal["ready"]
    checks: dict[str, Check]
