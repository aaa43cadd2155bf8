"""`$var` references in the agent's streamed text, resolved as it streams (docs/spec/variables.md §Streaming).

The pure `extraction.variables.stream.VariableStream` does the streaming (a reference split across
chunks is held back until it is complete, non-text items pass through in order, unknown
references stay as written with a warning). Its lookups are synchronous, so the values come from
the service ahead of time: before each chunk is fed, the references that chunk can complete are
looked up (`POST /resolve` with the bare reference, once per distinct reference) as steps of a
plan, which the toolkit runs on its sync or its async client. Text flows chunk by chunk: nothing
waits for the end of the stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extraction.variables.errors import (
    InvalidVariableName,
    MissingField,
    NotJSON,
    UnknownVariable,
    ValueTooLarge,
    VariableError,
)
from extraction.variables.refs import Ref, find_refs
from extraction.variables.resolve import ResolveWarning
from extraction.variables.stream import VariableStream
from toolout.sdk import variables
from toolout.sdk.errors import ToolOutAPIError, UnavailableError
from toolout.sdk.plans import Plan

ERRORS: dict[str, type[VariableError]] = {
    cls.code: cls for cls in (UnknownVariable, MissingField, NotJSON, ValueTooLarge, InvalidVariableName)
}


class PrefetchedValues:
    """A `VariableSource` over values fetched beforehand (a missing one reads as unknown)."""

    def __init__(self) -> None:
        self.found: dict[Ref, Any] = {}

    def names(self) -> Sequence[str]:
        return sorted({ref.name for ref, value in self.found.items() if not isinstance(value, VariableError)})

    def lookup(self, ref: Ref, *, max_chars: int | None = None) -> Any:
        if ref not in self.found:
            raise UnknownVariable(f"{ref} was not looked up", name=ref.name)
        value = self.found[ref]
        if isinstance(value, VariableError):
            raise value
        return value

    def handle(self, name: str) -> str | None:
        return None


def lookup(session: str, ref: Ref, max_value_chars: int | None) -> Plan[Any]:
    """One reference's value from the service, or the typed error it reports (returned, not raised)."""
    try:
        answer = yield from variables.resolve(session, str(ref), max_value_chars=max_value_chars)
    except ToolOutAPIError as exc:
        error = ERRORS.get(exc.code)
        if error is None or isinstance(exc, UnavailableError):
            raise
        return error(exc.message, **exc.details)
    return answer["value"]


class StreamResolver:
    """One text stream's resolution; each method is a plan (see the module docstring)."""

    def __init__(self, session: str, *, max_value_chars: int | None = None) -> None:
        self.session, self.max_value_chars = session, max_value_chars
        self.values = PrefetchedValues()
        self.stream = VariableStream(self.values, strict=False, max_value_chars=max_value_chars)

    @property
    def warnings(self) -> list[ResolveWarning]:
        return self.stream.warnings

    def push(self, item: Any) -> Plan[list[Any]]:
        """What to emit for one stream item (`VariableStream.push`), once its references are looked up."""
        if isinstance(item, str):
            yield from self._prefetch(self.stream.pending + item, final=False)
        else:
            yield from self._prefetch(self.stream.pending, final=True)
        return self.stream.push(item)

    def end(self) -> Plan[list[str]]:
        """The end of a text run: what was held back, resolved."""
        yield from self._prefetch(self.stream.pending, final=True)
        return self.stream.end()

    def _prefetch(self, text: str, *, final: bool) -> Plan[None]:
        """Look up the references `text` completes (a superset of what the stream will render)."""
        if "$" not in text:
            return
        spans, _ = find_refs(text, final=final)
        for ref in dict.fromkeys(span.ref for span in spans):
            if ref not in self.values.found:
                self.values.found[ref] = yield from lookup(self.session, ref, self.max_value_chars)
