"""Where an upload goes: its `name`, `output` and `write_mode` parameters (query or header; the header wins).

The texts are parsed by the pure routing code (`extraction.directives.specs.make_route`), so an upload's
route means exactly what the same `output=`/`write-mode=` means in a directive:

* `inline` (the default): today's upload; the output is also a variable, named `name` when given
  (binding a name that exists points it at the new output, as setting a variable does) or
  `<tool>_<n>` when not;
* `variable:NAME` / `file:PATH`: routed (append unless `write_mode` says otherwise); `{today}` in a
  path becomes today's UTC date; the answer is the manifest, not the content;
* `discard`: nothing is stored.

`name` belongs to inline uploads; with `variable:NAME` it may only repeat NAME; with `file:` or
`discard` it is refused (a file has a path, not a name). `write_mode` needs a routed output.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from fastapi import Header, Query

from extraction.directives.file_paths import expand_path
from extraction.directives.specs import DestinationKind, InvalidDestination, OutputRoute, WriteMode, make_route
from extraction.variables.names import validate_name
from infra.outputs.storing import Target
from infra.stores.records import Space


@dataclass(frozen=True)
class UploadRoute:
    """An upload's parsed route and explicit name."""

    route: OutputRoute
    name: str | None = None

    @property
    def kind(self) -> DestinationKind:
        return self.route.output.kind

    def fingerprint_parts(self) -> list[str]:
        """What makes two uploads different requests (for `Idempotency-Key`)."""
        return [str(self.route.output), str(self.route.write_mode or ""), self.name or ""]

    def target(self, today: dt.date) -> Target | None:
        """Where `infra.outputs.storing.store_output` writes; None for `discard`."""
        output, mode = self.route.output, self.route.effective_write_mode
        if output.kind is DestinationKind.DISCARD:
            return None
        if output.kind is DestinationKind.INLINE:
            return Target(Space.VARIABLE, self.name, WriteMode.REPLACE)
        assert output.target is not None and mode is not None  # a routed destination has both
        if output.kind is DestinationKind.VARIABLE:
            return Target(Space.VARIABLE, output.target, mode)
        return Target(Space.FILE, expand_path(output.target, today), mode)


def upload_route(
    name: Annotated[
        str | None, Query(description="variable name for an inline upload (default: <tool>_<n>)", max_length=200)
    ] = None,
    output: Annotated[
        str | None, Query(description="inline (default) | variable:NAME | file:PATH | discard", max_length=1100)
    ] = None,
    write_mode: Annotated[
        str | None, Query(description="append (default when routed) | replace | new", max_length=20)
    ] = None,
    x_variable_name: Annotated[str | None, Header(description="alternative to name")] = None,
    x_output: Annotated[str | None, Header(description="alternative to output")] = None,
    x_write_mode: Annotated[str | None, Header(description="alternative to write_mode")] = None,
) -> UploadRoute:
    """The route of one upload; typed 422s for a bad name, destination, path or write mode."""
    chosen_name = _pick(x_variable_name, name)
    route = make_route(_pick(x_output, output) or "inline", _pick(x_write_mode, write_mode))
    if chosen_name is not None:
        validate_name(chosen_name)
        _check_name_fits(chosen_name, route)
    return UploadRoute(route, chosen_name)


def _pick(header: str | None, query: str | None) -> str | None:
    value = header if header is not None else query
    return None if value is None else value.strip()


def _check_name_fits(name: str, route: OutputRoute) -> None:
    output = route.output
    if output.kind is DestinationKind.VARIABLE and output.target != name:
        raise InvalidDestination(
            f"name={name!r} contradicts output={output}: give the name once, as output=variable:NAME",
            name=name,
            destination=str(output),
        )
    if output.kind in (DestinationKind.FILE, DestinationKind.DISCARD):
        raise InvalidDestination(
            f"name={name!r} applies to inline and variable: uploads, not to output={output}",
            name=name,
            destination=str(output),
        )


def utc_today() -> dt.date:
    """The date `{today}` expands to: UTC, so every replica and client agrees."""
    return dt.datetime.now(dt.UTC).date()
