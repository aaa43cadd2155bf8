"""Resolving `$ref`s in tool arguments and text (docs/spec/variables.md §Resolution), against any `VariableSource`.

Rules, with array indexes (`extraction.variables.refs` has the grammar):

* A string that is only a reference (`"$weather_nyc"`, `"$orders.items[0]"`) becomes the stored
  value, typed: an object stays an object, a number a number.
* References inside a longer string are interpolated: strings as they are, other values as
  compact JSON (`extraction.variables.paths.as_text`).
* Objects and arrays resolve recursively. Object KEYS are never resolved: they are names the
  tool defines, and a key that changed with the session's variables would be a surprise.
* A whole-value reference to an unknown variable, or to a path that does not exist, raises
  (`UnknownVariable`, `MissingField`, `NotJSON`): the caller clearly meant a variable.
* Inside a longer string an unknown `$word` is left verbatim (`$HOME/bin` in a shell command)
  and reported as a `ResolveWarning` (code `unknown_variable`).
* Inside a longer string a *known* variable with a bad path (`$weather.tempp`) raises too:
  the agent meant that variable, and a silently unresolved field would be sent to the tool.
  (`strict=False` — used for streamed text, which cannot fail half-way — keeps it verbatim
  with a warning of code `unresolved_reference` instead.)
* Size guard: with `max_value_chars`, a reference whose value is longer (in chars of its text
  form) raises `ValueTooLarge`, which suggests passing the handle. The limit applies per
  reference, and it is a parameter: the server passes its setting, the SDK its own.

Each distinct reference is looked up once per `ReferenceResolver` (a server source reads blobs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from extraction.variables.errors import UnknownVariable, VariableError, unknown_variable, value_too_large
from extraction.variables.paths import as_text, walk
from extraction.variables.refs import Ref, RefSpan, find_refs, format_ref, whole_ref

WarningCode = Literal["unknown_variable", "unresolved_reference"]


@runtime_checkable
class VariableSource(Protocol):
    """Where the resolver finds variables: a dict in memory, or the server's session store.

    `lookup` raises the typed errors built by `extraction.variables.errors` (`unknown_variable`
    with `names()`, `missing_key`, `index_out_of_range`, `not_a_container`, `not_json`). It may
    raise `value_too_large` when it can tell the value exceeds `max_chars` before building it.
    `handle` gives the stored output's handle, for messages that suggest passing it instead.
    """

    def names(self) -> Sequence[str]: ...

    def lookup(self, ref: Ref, *, max_chars: int | None = None) -> Any: ...

    def handle(self, name: str) -> str | None: ...


class DictVariableSource:
    """Variables held as Python values (tests, the SDK toolkit, an embedded mode).

    A top-level `str` is a text output (asking it for a field is `NotJSON`); anything else is
    a parsed JSON value. Insertion order is the listing order.
    """

    def __init__(self, values: Mapping[str, Any] | None = None, *, handles: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, Any] = dict(values or {})
        self.handles: dict[str, str] = dict(handles or {})

    def set(self, name: str, value: Any, *, handle: str | None = None) -> None:
        """Store (or replace) a variable."""
        self.values[name] = value
        if handle is not None:
            self.handles[name] = handle

    def names(self) -> Sequence[str]:
        return list(self.values)

    def lookup(self, ref: Ref, *, max_chars: int | None = None) -> Any:
        if ref.name not in self.values:
            raise unknown_variable(ref.name, self.values)
        value = self.values[ref.name]
        return walk(value, ref, text=isinstance(value, str))

    def handle(self, name: str) -> str | None:
        return self.handles.get(name)


class ResolveWarning(BaseModel):
    """Something left unresolved, with the reference as written and where it was (JSON pointer)."""

    code: WarningCode
    reference: str = Field(description='the reference as written, e.g. "$HOME"')
    location: str = Field(description='JSON pointer of the string inside the resolved value; "" is the root')
    message: str


class Resolved(BaseModel):
    """A resolved value and the warnings about references left as written."""

    value: Any
    warnings: list[ResolveWarning] = Field(default_factory=list)


class _Found(NamedTuple):
    value: Any
    text: str


class ReferenceResolver:
    """Looks references up (once each) and renders text; the one code path for values and streams."""

    def __init__(self, source: VariableSource, *, strict: bool = True, max_value_chars: int | None = None) -> None:
        self.source, self.strict, self.max_value_chars = source, strict, max_value_chars
        self.warnings: list[ResolveWarning] = []
        self._warned: set[tuple[str, str, str]] = set()
        self._outcomes: dict[Ref, _Found | VariableError] = {}

    def _outcome(self, ref: Ref) -> _Found | VariableError:
        """The lookup's result or its error, computed once per reference (errors are kept, not re-raised,
        so a `$HOME` repeated 100 000 times in a text costs one lookup and no exception handling)."""
        outcome = self._outcomes.get(ref)
        if outcome is None:
            try:
                value = self.source.lookup(ref, max_chars=self.max_value_chars)
                outcome = _Found(value, self._checked_text(ref, value))
            except VariableError as err:
                outcome = err
            self._outcomes[ref] = outcome
        return outcome

    def _found(self, ref: Ref) -> _Found:
        outcome = self._outcome(ref)
        if isinstance(outcome, VariableError):
            raise outcome.with_traceback(None)
        return outcome

    def value_of(self, ref: Ref) -> Any:
        """The referenced value (typed), size-checked; raises the source's typed errors."""
        return self._found(ref).value

    def text_of(self, ref: Ref) -> str:
        """The referenced value as interpolated text."""
        return self._found(ref).text

    def _checked_text(self, ref: Ref, value: Any) -> str:
        text = as_text(value)
        if self.max_value_chars is not None and len(text) > self.max_value_chars:
            raise value_too_large(format_ref(ref), len(text), self.max_value_chars, self.source.handle(ref.name))
        return text

    def render(self, text: str, spans: Iterable[RefSpan], location: str = "") -> str:
        """`text` with each span replaced by its value's text (or kept, with a warning)."""
        parts: list[str] = []
        pos = 0
        for span in spans:
            parts += [text[pos : span.start], self._substitute(text[span.start : span.end], span.ref, location)]
            pos = span.end
        parts.append(text[pos:])
        return "".join(parts)

    def _substitute(self, written: str, ref: Ref, location: str) -> str:
        outcome = self._outcome(ref)
        if isinstance(outcome, _Found):
            return outcome.text
        if isinstance(outcome, UnknownVariable):
            self._warn("unknown_variable", written, location, outcome)
        elif self.strict:
            raise outcome.with_traceback(None)
        else:
            self._warn("unresolved_reference", written, location, outcome)
        return written

    def _warn(self, code: WarningCode, written: str, location: str, err: VariableError) -> None:
        if (code, written, location) not in self._warned:
            self._warned.add((code, written, location))
            self.warnings.append(ResolveWarning(code=code, reference=written, location=location, message=err.message))

    def resolve_value(self, value: Any, location: str = "") -> Any:
        """The resolution rules over a JSON-like value (see the module docstring)."""
        if isinstance(value, str):
            return self.resolve_string(value, location)
        if isinstance(value, dict):
            return {key: self.resolve_value(item, f"{location}/{_pointer(key)}") for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.resolve_value(item, f"{location}/{i}") for i, item in enumerate(value)]
        return value

    def resolve_string(self, text: str, location: str = "") -> Any:
        """A whole reference becomes its typed value; otherwise references are interpolated."""
        if "$" not in text:
            return text
        ref = whole_ref(text)
        if ref is not None:
            return self.value_of(ref)
        return self.render(text, find_refs(text)[0], location)


def _pointer(key: object) -> str:
    """One JSON pointer segment (RFC 6901 escaping)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def resolve(value: Any, source: VariableSource, *, max_value_chars: int | None = None) -> Resolved:
    """Resolve every reference in a tool's arguments (or any JSON value) — what the API's
    `POST /resolve` and the toolkit's tool wrapper both call."""
    resolver = ReferenceResolver(source, strict=True, max_value_chars=max_value_chars)
    return Resolved(value=resolver.resolve_value(value), warnings=resolver.warnings)


def interpolate(
    text: str, source: VariableSource, *, strict: bool = True, max_value_chars: int | None = None
) -> Resolved:
    """Interpolate the references in a text (never typed: the result is a string).

    This is the whole-text counterpart of `extraction.variables.stream`; with `strict=False` it
    is exactly what a stream produces from the same text in any chunking.
    """
    resolver = ReferenceResolver(source, strict=strict, max_value_chars=max_value_chars)
    return Resolved(value=resolver.render(text, find_refs(text)[0]), warnings=resolver.warnings)
