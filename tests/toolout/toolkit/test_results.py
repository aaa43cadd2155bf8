"""ToolResult normalisation and the ToolMessage conversion rules of docs/spec/tools.md §Results."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

from pydantic import BaseModel

from toolout.toolkit.results import (
    ImagePart,
    JsonResult,
    PartsResult,
    TextPart,
    TextResult,
    execution_error,
    result_content,
    result_value,
    stable_json,
    to_tool_result,
    tool_message,
)


class Hit(BaseModel):
    title: str
    score: float


@dataclasses.dataclass
class Point:
    y: int
    x: int


def test_execute_return_values_are_normalised() -> None:
    assert to_tool_result("hello") == TextResult("hello")
    assert to_tool_result({"a": 1}) == JsonResult({"a": 1})
    assert to_tool_result([1, 2]) == JsonResult([1, 2])
    assert to_tool_result(3.5) == JsonResult(3.5)
    assert to_tool_result(None) == JsonResult(None)
    explicit = PartsResult((TextPart("a"),), is_error=True)
    assert to_tool_result(explicit) is explicit


def test_json_is_stable_compact_and_sorted() -> None:
    assert stable_json({"b": 1, "a": [1, {"d": None, "c": "é"}]}) == '{"a":[1,{"c":"é","d":null}],"b":1}'
    assert stable_json({"b": 1, "a": 2}) == stable_json({"a": 2, "b": 1})


def test_json_accepts_models_dataclasses_and_common_types() -> None:
    value = {
        "hit": Hit(title="t", score=0.5),
        "point": Point(y=2, x=1),
        "when": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "id": uuid.UUID(int=1),
    }
    assert stable_json(value) == (
        '{"hit":{"score":0.5,"title":"t"},"id":"00000000-0000-0000-0000-000000000001",'
        '"point":{"x":1,"y":2},"when":"2024-01-02T03:04:05Z"}'
    )


def test_content_per_result_kind() -> None:
    assert result_content(TextResult("plain")) == "plain"
    assert result_content(JsonResult(Hit(title="t", score=1.0))) == '{"score":1.0,"title":"t"}'
    parts = PartsResult((TextPart("see"), ImagePart("https://x/y.png"), ImagePart("data:image/png;base64,AA", "low")))
    assert result_content(parts) == [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "low"}},
    ]


def test_result_value_nests_results_as_plain_values() -> None:
    assert result_value(TextResult("t")) == "t"
    assert result_value(JsonResult({"a": 1})) == {"a": 1}
    assert result_value(PartsResult((TextPart("p"),))) == [{"type": "text", "text": "p"}]


def test_execution_error_text_is_the_seeds() -> None:
    assert execution_error("boom") == TextResult("Error executing tool: boom", is_error=True)


def test_tool_message_carries_the_error_flag_and_an_openai_form() -> None:
    message = tool_message(JsonResult({"a": 1}, is_error=True), "call_1", name="search")
    assert (message.content, message.is_error, message.name) == ('{"a":1}', True, "search")
    assert message.to_openai() == {"role": "tool", "tool_call_id": "call_1", "content": '{"a":1}'}
    assert [result.type for result in (TextResult(""), PartsResult(()), JsonResult(0))] == ["text", "parts", "json"]
