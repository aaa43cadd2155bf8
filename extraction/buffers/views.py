"""The texts `buffer_ops` answers with, rendered from metadata and already-read content (no I/O).

Plain text, never JSON (the agent's framework would escape JSON twice). Every window starts with
a bracketed header saying what it shows (`[search_results: lines 1-200 of 1,234]`) and ends
with a bracketed note saying how to continue when there is more, in `buffer_ops` parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from extraction.buffers.store import BufferInfo, ExportResult
from extraction.documents.grep import GrepResult
from extraction.documents.lines import ReadResult


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def list_text(infos: Sequence[BufferInfo]) -> str:
    """`list`: every buffer's name and size."""
    if not infos:
        return "No buffers yet."
    lines = [f"- {i.name}: {_plural(i.chars, 'char')}, {_plural(i.lines, 'line')}" for i in infos]
    return f"{_plural(len(infos), 'buffer')}:\n" + "\n".join(lines)


def info_text(info: BufferInfo) -> str:
    """`info`: one buffer's metadata, one field a line."""
    fields = [
        f"buffer: {info.name}",
        f"size: {_plural(info.chars, 'char')} ({_plural(info.bytes, 'byte')}), {_plural(info.lines, 'line')}",
        f"content_type: {info.content_type}",
        f"source: {info.source or 'unknown'}",
        f"created_at: {info.created_at.isoformat()}",
        f"updated_at: {info.updated_at.isoformat()}",
    ]
    if info.handle:
        fields.append(f"handle: {info.handle}")
    return "\n".join(fields)


def chars_text(info: BufferInfo, offset: int, text: str, *, operation: str) -> str:
    """`peek` / `read` by characters: the window, and where the next one starts."""
    if not text:
        return f"[{info.name}: empty]" if info.chars == 0 else f"[{info.name}: no characters at offset {offset:,}]"
    end = offset + len(text)
    body = f"[{info.name}: chars {offset:,}-{end - 1:,} of {info.chars:,}]\n{text}"
    left = info.chars - end
    if left <= 0:
        return body
    more = f"offset={end}, length=N" if operation == "read" else f"offset={end}"
    return f"{body}\n[{_plural(left, 'more char')}: {operation} again with {more}]"


def lines_text(info: BufferInfo, result: ReadResult) -> str:
    """`read` by lines: numbered lines (as `Read` numbers them) and what follows."""
    header = f"[{info.name}: lines {result.first_line:,}-{result.last_line:,} of {result.total_lines:,}]"
    notes = []
    if result.last_line < result.total_lines:
        left = result.total_lines - result.last_line
        notes.append(f"[{_plural(left, 'more line')}: read again with start_line={result.last_line + 1}]")
    if result.clipped_lines:
        notes.append(
            f"[{_plural(result.clipped_lines, 'line')} clipped; read by offset/length or search to see inside them]"
        )
    return "\n".join([header, result.text, *notes])


def search_text(pattern: str, found: Sequence[tuple[str, GrepResult]], searched: Sequence[str]) -> str:
    """`search`: matches grouped per buffer, then a summary (or why nothing was found)."""
    hits = [(name, result) for name, result in found if result.matches]
    total = sum(result.matches for _, result in hits)
    where = f'"{searched[0]}"' if len(searched) == 1 else _plural(len(searched), "buffer")
    if not hits:
        return f"No matches for {pattern!r} in {where}."
    parts = [f"== {name} ==\n{result.text}" for name, result in hits]
    summary = f"{_plural(total, 'matching line')} for {pattern!r} in {where}"
    if len(searched) > 1:
        summary += f" ({len(hits):,} with matches)"
    if any(result.truncated for _, result in found):
        summary += (
            "; stopped at max_matches, so later lines were not searched (narrow the pattern or raise max_matches)"
        )
    return "\n".join(parts) + f"\n\n{summary}."


def export_text(name: str, result: ExportResult) -> str:
    """`export`: what was written where."""
    return (
        f"[buffer exported] {name} -> file:{result.path} ({_plural(result.chars, 'char')}, {result.write_mode.value})"
    )
