"""`@tool` without `input=`: the input model is built from the function's signature.

Rules (decided here, relied on by `toolout.toolkit.tool.tool`):
* every parameter becomes a field of a pydantic model (`create_model`, extra keys forbidden),
  with its annotation (required: an unannotated parameter is a `ToolDefinitionError`) and its
  default (none: the field is required);
* except two kinds, injected at call time and invisible to the model: a parameter annotated
  `ToolContext` receives the call's context, and a parameter whose default is a `Dependency`
  receives `await ctx.resolve(that dependency)`;
* `*args`, `**kwargs` and positional-only parameters are refused (arguments arrive by name);
* description: the docstring (`inspect.getdoc`) without its Google-style `Args:` section; the
  entries of that section (`name: text` or `name (type): text`, continuation lines indented)
  describe the fields, unless the annotation already carries a `Field(description=...)`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency
from toolout.toolkit.errors import ToolDefinitionError

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_ENTRY = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class InferredSignature:
    """What `@tool` learnt from a function: its input model and how to call it."""

    model: type[BaseModel]
    description: str
    fields: tuple[str, ...]
    context_params: tuple[str, ...] = ()
    dependency_params: dict[str, Dependency[Any]] = field(default_factory=dict)

    async def call_kwargs(self, args: BaseModel, ctx: ToolContext) -> dict[str, Any]:
        """Keyword arguments for one call: the fields, the context, the resolved dependencies."""
        kwargs = {name: getattr(args, name) for name in self.fields}
        kwargs |= {name: ctx for name in self.context_params}
        for name, dependency in self.dependency_params.items():
            kwargs[name] = await ctx.resolve(dependency)
        return kwargs


def infer_signature(fn: Callable[..., Any], name: str) -> InferredSignature:
    description, docs = split_docstring(inspect.getdoc(fn) or "")
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_params: list[str] = []
    dependency_params: dict[str, Dependency[Any]] = {}
    for param in inspect.signature(fn).parameters.values():
        _check_kind(param, name)
        annotation = hints.get(param.name, inspect.Parameter.empty)
        if annotation is ToolContext:
            context_params.append(param.name)
        elif isinstance(param.default, Dependency):
            dependency_params[param.name] = param.default
        else:
            fields[param.name] = _field(param, annotation, docs.get(param.name), name)
    model = create_model(f"{name}_input", __config__=ConfigDict(extra="forbid"), **fields)
    return InferredSignature(model, description, tuple(fields), tuple(context_params), dependency_params)


def split_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description without the `Args:` section, {parameter: its description})."""
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    if start is None:
        return doc.strip(), {}
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(lines[start])):
        end += 1
    description = "\n".join(lines[:start] + lines[end:]).strip()
    return re.sub(r"\n{3,}", "\n\n", description), _parse_entries(lines[start + 1 : end])


def _parse_entries(lines: list[str]) -> dict[str, str]:
    entries: dict[str, str] = {}
    entry_indent = min((_indent(line) for line in lines if line.strip()), default=0)
    current = None
    for line in lines:
        match = _ARG_ENTRY.match(line.strip())
        if match and _indent(line) == entry_indent:
            current = match.group(1)
            entries[current] = match.group(2).strip()
        elif current and line.strip():
            entries[current] = f"{entries[current]} {line.strip()}".strip()
    return entries


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _check_kind(param: inspect.Parameter, tool_name: str) -> None:
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
        raise ToolDefinitionError(
            f"tool {tool_name!r}: parameter {param.name!r} must be a named parameter (no *args, **kwargs or '/')",
            tool=tool_name,
        )


def _field(param: inspect.Parameter, annotation: Any, doc: str | None, tool_name: str) -> tuple[Any, Any]:
    if annotation is inspect.Parameter.empty:
        raise ToolDefinitionError(f"tool {tool_name!r}: parameter {param.name!r} needs a type annotation")
    if doc and not _has_description(annotation):
        annotation = Annotated[annotation, Field(description=doc)]
    default = ... if param.default is inspect.Parameter.empty else param.default
    return annotation, default


def _has_description(annotation: Any) -> bool:
    if get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(meta, FieldInfo) and meta.description for meta in get_args(annotation)[1:])
