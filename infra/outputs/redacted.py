"""An output's redacted view: what every model is shown of it, derived once when the output is stored.

Tool outputs carry secrets (bearer tokens in logs, cloud keys in env dumps, passwords in URLs). While the
content streams into its blob, `infra.outputs.versions.Meter` runs every credential rule over it in one scan
(`infra.privacy`). When one matches, a second pass writes the content with each secret replaced by
`[REDACTED:<kind>]` beside the blob (`<blob_key>.redacted`, with its own `.tokidx` and `.lines`), and the
record keeps the view, the counts by kind and a preview made from the view. An HTML output's view is its
text view, redacted. `infra.outputs.views.reading_view` hands that view to every reader that feeds a model
(chunks, Read/Grep, query tables, `/lines`, `/grep`); only `/content` serves the bytes as uploaded.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from extraction.documents.stats import DocumentStats
from infra.blobstore import BlobStore
from infra.outputs.content import iter_content
from infra.outputs.metering import Meter, preview_of
from infra.privacy.rules import RULESET
from infra.privacy.scanner import SecretScanner, default_scanner
from infra.privacy.streaming import redacted_blocks
from infra.stores.records import OutputRecord, Redaction, TextView

REDACTED_SUFFIX = ".redacted"


def redacted_keys(record: OutputRecord) -> list[str]:
    """Every blob a redacted view of `record` may have written: the view, its token and line indexes."""
    key = f"{record.blob_key}{REDACTED_SUFFIX}"
    return [key, f"{key}.tokidx", f"{key}.lines"]


def redacted_blob_keys(record: OutputRecord) -> list[str]:
    """The blobs a redacted view owns (none when it is inline or absent)."""
    redaction = record.redaction
    if redaction is None or redaction.view.inline is not None:
        return []
    view = redaction.view
    return [key for key in (view.blob_key, view.index_key, view.lines_key) if key]


def readable_blocks(blobs: BlobStore, record: OutputRecord, block_size: int) -> Iterator[bytes]:
    """What a model would read of `record` without redaction: its text view when it has one, else its content."""
    text = record.text_view
    if text is None:
        return iter_content(blobs, record, block_size=block_size)
    as_view = record.model_copy(
        update={"blob_key": text.blob_key, "inline": text.inline, "stats": text.stats, "lines_key": text.lines_key}
    )
    return iter_content(blobs, as_view, block_size=block_size)


class RedactedPass:
    """The content with its secrets replaced, counted by kind as it streams by."""

    def __init__(self, scanner: SecretScanner | None = None) -> None:
        self.scanner = scanner or default_scanner()
        self.counts: Counter[str] = Counter()
        self.started = time.perf_counter()

    def blocks(self, blocks: Iterator[bytes]) -> Iterator[bytes]:
        return redacted_blocks(blocks, self.scanner, self.counts)

    def redaction(self, record: OutputRecord, view: TextView) -> Redaction:
        view = view.model_copy(update={"seconds": time.perf_counter() - self.started})
        return Redaction(ruleset=RULESET, counts=dict(sorted(self.counts.items())), view=view)

    def view(self, record: OutputRecord, stats: DocumentStats, chars: int | None, inline: bytes | None) -> TextView:
        keys = redacted_keys(record)
        return TextView(
            converter=RULESET,
            source_sha256=record.stats.sha256,
            stats=stats,
            blob_key=keys[0],
            index_key=keys[1],
            lines_key=None if inline is not None else keys[2],
            chars=chars,
            inline=inline,
        )


def with_redaction(
    blobs: BlobStore,
    record: OutputRecord,
    blocks: Callable[[], Iterable[bytes]],
    holds_secret: bool | None,
    encoding: str,
    block_size: int,
) -> OutputRecord:
    """`record` with its redacted view when its readable text holds a secret: an HTML output's text view is
    always looked at again (the scan saw the markup), any other content only when the scan found a secret
    or did not run (`holds_secret` None).

    Unlike the text view, a failure here fails the store: an output whose secrets could not be replaced
    must not be read by a model."""
    if holds_secret is False and record.text_view is None:
        return record
    if record.text_view is not None:
        blocks = lambda: readable_blocks(blobs, record, block_size)  # noqa: E731
    redacting = RedactedPass()
    inline = record.inline is not None and (record.text_view is None or record.text_view.inline is not None)
    try:
        redacted = redacting.blocks(iter(blocks()))
        return _redacted(blobs, record, redacting, Meter(encoding, scan=False), redacted, inline)
    except BaseException:
        for key in redacted_keys(record):
            blobs.delete(key)
        raise


def _redacted(
    blobs: BlobStore, record: OutputRecord, redacting: RedactedPass, meter: Meter, blocks: Iterator[bytes], inline: bool
) -> OutputRecord:
    """Write the redacted content (inline beside inline content) and its indexes; `record` alone if none was found."""
    keys = redacted_keys(record)
    data = b"".join(meter.metered(blocks)) if inline else None
    if data is None:
        blobs.put_stream(keys[0], meter.metered(blocks))
    known = meter.finish()
    if not redacting.counts:
        if data is None:
            blobs.delete(keys[0])
        return record
    view = redacting.view(record, known.measured.stats, known.chars, data)
    if data is None:
        blobs.put_bytes(keys[1], known.measured.index.model_dump_json().encode())
        blobs.put_bytes(keys[2], known.lines.model_dump_json().encode())
    shown = preview_of(known.head or b"", known.measured.stats.bytes, record.content_type, parts=record.parts)
    return record.model_copy(update={"redaction": redacting.redaction(record, view), "preview": shown})
