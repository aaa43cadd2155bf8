"""`Toolkit.handle` takes the tool calls exactly as the openai SDK and litellm give them."""

from __future__ import annotations

import os

from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import OrderTools, sync_kit


def test_openai_sdk_objects() -> None:
    from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall

    calls = [
        ChatCompletionMessageToolCall(
            id="a", type="function", function={"name": "get_orders", "arguments": '{"limit": 1}'}
        ),
        ChatCompletionMessageToolCall(id="b", type="function", function={"name": "get_orders", "arguments": "{}"}),
    ]
    kit = sync_kit(FakeService(), OrderTools().all)
    message = ChatCompletionMessage(role="assistant", content=None, tool_calls=calls)
    assert [m["tool_call_id"] for m in kit.handle(calls)] == ["a", "b"]
    assert [m["tool_call_id"] for m in kit.handle(message)] == ["a", "b"]


def test_litellm_objects() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm.types.utils import ChatCompletionMessageToolCall, Message

    call = ChatCompletionMessageToolCall(id="c", type="function", function={"name": "get_orders", "arguments": "{}"})
    kit = sync_kit(FakeService(), OrderTools().all)
    (tool_message,) = kit.handle(Message(role="assistant", content=None, tool_calls=[call]))
    assert tool_message["tool_call_id"] == "c" and '"items"' in tool_message["content"]
