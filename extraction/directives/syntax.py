"""The routing directives (docs/spec/directives.md §Syntax) as a pure parser and printer (no I/O, no clock).

    @tools web_search_tavily(output=variable:foo, write-mode=replace), code_execution(output=file:results/{today})
    @tools web_search_tavily(output=variable:search_results),
           code_execution(output=variable:analysis)
    @input file:myfile (output=variable:foo)      # append by default

Grammar and layout rules:

* A directive is a line whose first non-blank text is `@tools` or `@input`; every other line
  (prose, other `@` directives such as `@model none`) is ignored.
* `@tools` takes tool tokens `NAME` or `NAME(params)`, separated by commas and/or spaces. Tool
  names are `[A-Za-z0-9_][A-Za-z0-9_.:-]*`.
* `@input` takes a source `kind:value` (the value may contain spaces; a space followed by `(`
  or `#` ends it), optionally followed by `(params)`.
* params: `output=DEST` and `write-mode=append|replace|new` (`write_mode` is accepted too),
  separated by commas and/or whitespace; `DEST` is `inline`, `discard`, `variable:NAME` or
  `file:PATH` (`extraction.directives.specs`). A value with spaces, commas, parentheses, quotes
  or backslashes is written in double quotes, `\\` escaping the next character.
* Line breaks: anywhere inside `( … )`; between tokens when the line so far ends with a comma,
  or when the next line is indented deeper than the directive's own line (and is not itself
  a directive). A blank line ends a directive unless a `(` is still open.
* `#` starts a comment where a token could start (and after a space inside an `@input`
  source), so `url:https://x.org/page#part` keeps its fragment.
* Several `@tools` lines aggregate; a tool mentioned again keeps its first position, and the
  last token that has an `output=` decides its route (a bare mention does not reset it).
* Any mistake is a `DirectiveError` that names the token and its 1-based line and column.

`format_directives(spec)` prints the canonical text (one `@tools` line, then one line per
input), which `parse_directives` reads back as the same spec.
"""

from __future__ import annotations

import re

from extraction.directives.specs import (
    DirectiveError,
    InputDirective,
    InputSource,
    OutputRoute,
    RoutingSpec,
    parse_destination,
    parse_write_mode,
)
from extraction.errors import InvalidInput

PARAMETERS = ("output", "write-mode")
_DIRECTIVE = re.compile(r"([ \t]*)@(tools|input)(?=[ \t\r\n#]|\Z)")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BARE_VALUE = re.compile(r'[^\s,()"]+')
_WORD = re.compile(r"[^\s,()]{1,40}")
_Param = tuple[str, str, int, int]  # value, key as written, key position, value position


def parse_directives(text: str) -> RoutingSpec:
    """Every `@tools` and `@input` directive in `text` → one `RoutingSpec` (rules in the module docstring)."""
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tools: dict[str, OutputRoute | None] = {}
        self.inputs: list[InputDirective] = []

    def parse(self) -> RoutingSpec:
        pos = 0
        while pos <= len(self.text):
            match = _DIRECTIVE.match(self.text, pos)
            if match and match.end() <= self._line_end(pos):
                indent = len(match.group(1))
                pos = self._tools(match.end(), indent) if match.group(2) == "tools" else self._input(match, indent)
            else:
                pos = self._line_end(pos)
            pos += 1
        return RoutingSpec(tools=self.tools, inputs=self.inputs)

    # --- positions and gaps -------------------------------------------------------------

    def _line_end(self, pos: int) -> int:
        end = self.text.find("\n", pos)
        return len(self.text) if end < 0 else end

    def error(self, pos: int, problem: str, token: str | None = None) -> DirectiveError:
        """A `DirectiveError` for `token` (default: the word at `pos`) at 1-based line/column."""
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        shown = token if token is not None else self._word(pos)
        return DirectiveError(
            f"{problem} (at line {line}, column {column}: {shown!r})", token=shown, line=line, column=column
        )

    def _word(self, pos: int) -> str:
        match = _WORD.match(self.text, pos)
        return match.group() if match else self.text[pos : pos + 1] or "end of text"

    def _gap(self, pos: int, indent: int, after_comma: bool) -> tuple[int, bool]:
        """Skip spaces, comments and allowed line breaks; (position, True at the directive's end)."""
        text = self.text
        while True:
            while pos < len(text) and text[pos] in " \t\r":
                pos += 1
            if pos < len(text) and text[pos] == "#":
                pos = self._line_end(pos)
            if pos >= len(text):
                return pos, True
            if text[pos] != "\n":
                return pos, False
            if not self._continues(pos + 1, indent, after_comma):
                return pos, True
            pos += 1

    def _continues(self, start: int, indent: int, after_comma: bool) -> bool:
        line = self.text[start : self._line_end(start)]
        stripped = line.strip()
        if not stripped or stripped.startswith("@"):
            return False
        return after_comma or len(line) - len(line.lstrip(" \t")) > indent

    # --- @tools ---------------------------------------------------------------------------

    def _tools(self, pos: int, indent: int) -> int:
        start, after_comma, count = pos, False, 0
        while True:
            pos, end = self._gap(pos, indent, after_comma)
            if end:
                break
            if self.text[pos] == ",":
                pos, after_comma = pos + 1, True
                continue
            pos, after_comma, count = self._tool_token(pos, indent), False, count + 1
        if not count:
            raise self.error(start - len("@tools"), "@tools needs at least one tool name", "@tools")
        return pos

    def _tool_token(self, pos: int, indent: int) -> int:
        match = _TOOL_NAME.match(self.text, pos)
        if not match:
            raise self.error(pos, "expected a tool name (letters, digits, _ . : -)")
        name = match.group()
        if len(name) > 128:
            raise self.error(pos, "a tool name is at most 128 characters", name[:40])
        after, end = self._gap(match.end(), indent, False)
        route = None
        if not end and self.text[after] == "(":
            route, stop = self._params(after, name)
        elif not end and self.text[after] == ")":
            raise self.error(after, "unbalanced ')': no '(' is open", ")")
        else:
            stop = match.end()
        if name not in self.tools or route is not None:
            self.tools[name] = route
        return stop

    # --- @input ---------------------------------------------------------------------------

    def _input(self, match: re.Match[str], indent: int) -> int:
        text = self.text
        start = match.end()
        while start < len(text) and text[start] in " \t":
            start += 1
        stop = self._source_end(start)
        written = text[start:stop].rstrip()
        source = self._source(start, written)
        pos, end = self._gap(stop, indent, False)
        route = None
        if not end and text[pos] == "(":
            route, pos = self._params(pos, written)
            pos, end = self._gap(pos, indent, False)
        if not end:
            raise self.error(pos, "unexpected text after the @input source and its (parameters)")
        self.inputs.append(InputDirective(source=source, route=route))
        return pos

    def _source_end(self, pos: int) -> int:
        """Where an @input source ends: the line end, or a space followed by `(` or `#`."""
        text, line_end = self.text, self._line_end(pos)
        while pos < line_end:
            if text[pos] in " \t":
                after = pos
                while after < line_end and text[after] in " \t":
                    after += 1
                if after < line_end and text[after] in "(#":
                    return pos
                pos = after
            else:
                pos += 1
        return pos

    def _source(self, pos: int, written: str) -> InputSource:
        if not written:
            raise self.error(pos, "@input needs a source such as file:PATH or variable:NAME")
        kind, colon, value = written.partition(":")
        if not colon:
            raise self.error(pos, "an @input source is kind:value, e.g. file:notes.md or variable:foo", written)
        try:
            return InputSource(kind=kind, value=value)
        except InvalidInput as err:
            raise self.error(pos, err.message, written) from None

    # --- (params) -------------------------------------------------------------------------

    def _params(self, open_pos: int, token: str) -> tuple[OutputRoute | None, int]:
        """Parse `( … )` at `open_pos`; (route, position after `)`)."""
        params: dict[str, _Param] = {}
        pos = open_pos + 1
        while True:
            pos = self._param_gap(pos)
            if pos >= len(self.text):
                raise self.error(open_pos, f"unbalanced '(' after {token!r}: no ')' closes it", "(")
            if self.text[pos] == ")":
                return self._route(params, open_pos, token), pos + 1
            key, written, value, key_pos, value_pos, pos = self._param(pos)
            if key in params:
                raise self.error(key_pos, f"{key} is given twice for {token!r}", written)
            params[key] = (value, written, key_pos, value_pos)

    def _param_gap(self, pos: int) -> int:
        text = self.text
        while pos < len(text) and (text[pos] in " \t\r\n," or text[pos] == "#"):
            pos = self._line_end(pos) if text[pos] == "#" else pos + 1
        return pos

    def _param(self, pos: int) -> tuple[str, str, str, int, int, int]:
        """`key=value` at `pos`: (canonical key, key as written, value, key position, value position, end)."""
        match = _KEY.match(self.text, pos)
        if not match:
            raise self.error(pos, "expected a parameter such as output=variable:NAME")
        key = "write-mode" if match.group() == "write_mode" else match.group()
        if key not in PARAMETERS:
            raise self.error(pos, f"unknown parameter {match.group()!r} (known: output, write-mode)", match.group())
        at = self._skip_blanks(match.end())
        if self.text[at : at + 1] != "=":
            raise self.error(at, f"expected '=' after {match.group()}")
        value_pos = self._skip_blanks(at + 1)
        value, end = self._value(value_pos, key)
        return key, match.group(), value, pos, value_pos, end

    def _skip_blanks(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in " \t":
            pos += 1
        return pos

    def _value(self, pos: int, key: str) -> tuple[str, int]:
        if self.text[pos : pos + 1] == '"':
            return self._quoted(pos)
        match = _BARE_VALUE.match(self.text, pos)
        if not match:
            raise self.error(pos, f"{key}= needs a value (quote values with spaces, commas or parentheses)")
        return match.group(), match.end()

    def _quoted(self, pos: int) -> tuple[str, int]:
        out: list[str] = []
        at = pos + 1
        while at < len(self.text) and self.text[at] != "\n":
            char = self.text[at]
            if char == '"':
                return "".join(out), at + 1
            if char == "\\" and at + 1 < len(self.text) and self.text[at + 1] != "\n":
                at += 1
                char = self.text[at]
            out.append(char)
            at += 1
        raise self.error(pos, 'unterminated quoted value: a closing " is missing on this line', '"')

    def _route(self, params: dict[str, _Param], open_pos: int, token: str) -> OutputRoute | None:
        if "output" not in params:
            if "write-mode" in params:
                _, written, at, _ = params["write-mode"]
                raise self.error(at, "write-mode needs output=variable:NAME or output=file:PATH", written)
            return None
        output, _, _, output_at = params["output"]
        try:
            destination = parse_destination(output)
        except InvalidInput as err:
            raise self.error(output_at, f"invalid output for {token!r}: {err.message}", output) from None
        if "write-mode" not in params:
            return OutputRoute(output=destination)
        mode, _, _, mode_at = params["write-mode"]
        try:
            return OutputRoute(output=destination, write_mode=parse_write_mode(mode))
        except InvalidInput as err:
            raise self.error(mode_at, f"invalid write-mode for {token!r}: {err.message}", mode) from None


def format_route(route: OutputRoute) -> str:
    """The parameters of a route as directives write them: `output=…[, write-mode=…]`."""
    text = f"output={quote_value(str(route.output))}"
    return text + (f", write-mode={route.write_mode.value}" if route.write_mode else "")


def quote_value(value: str) -> str:
    """A parameter value as written: bare when it can be, else double-quoted with `\\` escapes."""
    if _BARE_VALUE.fullmatch(value) and "\\" not in value:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_directives(spec: RoutingSpec) -> str:
    """The canonical directive text of a spec: one `@tools` line, then one `@input` line each."""
    lines = []
    if spec.tools:
        tokens = [name if route is None else f"{name}({format_route(route)})" for name, route in spec.tools.items()]
        lines.append("@tools " + ", ".join(tokens))
    for directive in spec.inputs:
        params = f" ({format_route(directive.route)})" if directive.route else ""
        lines.append(f"@input {directive.source}{params}")
    return "\n".join(lines)
