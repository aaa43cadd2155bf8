"""A pydantic model as the fields of one Redis hash, derived from the model itself.

Job records live in a hash so Lua scripts and HINCRBY can change single fields in place (a counted
chunk, a terminal status). The mapping between the model and those fields is computed from the
model's fields instead of being kept by hand beside it, so adding a field to `JobRecord` is the
only change a new field needs:

* scalar fields are stored as text (`None` is no field at all; booleans as `true`/`false`);
* a nested model named in `flatten` becomes one field per sub-field, `<field>_<sub>` (so Redis can
  `HINCRBY job usage_calls 1`);
* anything else (dicts, lists, other models) is stored as JSON;
* decoding hands the text to pydantic in lax mode, which parses numbers, enums and booleans.
"""

from __future__ import annotations

import json
from enum import Enum
from types import UnionType
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

M = TypeVar("M", bound=BaseModel)

_SCALARS = (str, int, float, bool, type(None))


class HashCodec(Generic[M]):
    """Encode `model` instances to `dict[str, str]` hash fields and back."""

    def __init__(self, model: type[M], *, flatten: tuple[str, ...] = ()) -> None:
        self.model = model
        self.flatten = {name: _nested_model(model, name) for name in flatten}
        self.json_fields = frozenset(
            name
            for name, info in model.model_fields.items()
            if name not in self.flatten and not _scalar(info.annotation)
        )

    def encode(self, record: M) -> dict[str, str]:
        """Every set field of `record` (excluded ones included: the store keeps what clients never see)."""
        return self.fields(**{name: getattr(record, name) for name in type(record).model_fields})

    def field_names(self) -> list[str]:
        """Every hash field a record may have, flattened sub-fields (`usage_calls`) in place of their model's."""
        return [
            f"{name}_{sub}" if name in self.flatten else name
            for name in self.model.model_fields
            for sub in (self.flatten[name].model_fields if name in self.flatten else [""])
        ]

    def fields(self, **values: Any) -> dict[str, str]:
        """Hash fields for some of the model's fields (an update); unknown names are a bug, so they raise."""
        out: dict[str, str] = {}
        for name, value in values.items():
            out.update(self._encode_field(name, value))
        return out

    def decode(self, fields: dict[str, str]) -> M:
        """The record from its hash fields; sub-fields of flattened models are gathered back."""
        data: dict[str, Any] = {}
        for name, nested in self.flatten.items():
            prefix = f"{name}_"
            data[name] = {key.removeprefix(prefix): value for key, value in fields.items() if key.startswith(prefix)}
            if not set(data[name]) <= set(nested.model_fields):
                raise ValueError(f"unknown {name} sub-fields in {sorted(data[name])}")
        for name, value in fields.items():
            if name in self.model.model_fields and name not in self.flatten:
                data[name] = json.loads(value) if name in self.json_fields else value
        return self.model.model_validate(data)

    def _encode_field(self, name: str, value: Any) -> dict[str, str]:
        if name not in self.model.model_fields:
            raise KeyError(f"{self.model.__name__} has no field {name!r}")
        if value is None:
            return {}
        if name in self.flatten:
            return {f"{name}_{sub}": text for sub, text in self._flat(value).items()}
        if name in self.json_fields:
            return {name: json.dumps(_plain(value), separators=(",", ":"))}
        return {name: scalar_text(value)}

    def _flat(self, value: BaseModel) -> dict[str, str]:
        return {sub: scalar_text(item) for sub, item in value.model_dump().items() if item is not None}


def scalar_text(value: Any) -> str:
    """How one scalar is written to Redis: what `HINCRBY`/`HINCRBYFLOAT` and lax pydantic both read back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _plain(value: Any) -> Any:
    """JSON-ready data: models (also inside lists and dicts) as their JSON dump."""
    return to_jsonable_python(value)


def _scalar(annotation: Any) -> bool:
    """str, int, float, bool, enums, and `X | None` of those: stored as text rather than JSON."""
    origin = get_origin(annotation)
    if origin is Literal:
        return True
    if origin is not None and origin not in (Union, UnionType):
        return False  # dict[str, str], list[int]: containers, whatever they hold
    options = get_args(annotation) or (annotation,)
    return all(option in _SCALARS or (isinstance(option, type) and issubclass(option, Enum)) for option in options)


def _nested_model(model: type[BaseModel], name: str) -> type[BaseModel]:
    annotation = model.model_fields[name].annotation
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        raise TypeError(f"{model.__name__}.{name} is not a model and cannot be flattened")
    return annotation
