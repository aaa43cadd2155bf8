"""LiteLLMClient over real HTTP against the offline model: answers, usage, tool calls, error mapping.

Each test that injects faults sends a unique message, because the offline model counts attempts
per distinct request for its whole lifetime (that is what makes `fail_first` deterministic).
"""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from extraction.protocols import LLM, LLMReply
from extraction.texts.nonce import close_tag, open_tag
from extraction.texts.prompts import PromptContext, map_messages, read_grep_messages
from extraction.texts.report import FinalReport, parse_final_report
from extraction.texts.tools import sub_agent_tools
from infra.errors import LLMCallError, LLMRateLimited, LLMTimeout
from infra.llm.client import LiteLLMClient, client_from_settings, model_limits, require_retry_support, translate_error
from infra.settings import Settings

NONCE = "fedcba9876543210"
FACT = "2024-03-07T10:15:00 ERROR payment gateway declined order ORD-77341 (code E_CARD_DECLINED)"
HANDLE = "0b6f2d9e-1111-4a4a-9c9c-abcdefabcdef"
LINES = [f"2024-03-07T10:{i // 60 % 60:02d}:{i % 60:02d} INFO worker-{i % 7} processed batch {i}" for i in range(3_000)]
LINES[2_222] = FACT


def ctx(extract: str = "Find the payment error for order ORD-77341") -> PromptContext:
    return PromptContext(
        tool_name="shell",
        tool_args_json='{"cmd": "cat app.log"}',
        extract=extract,
        nonce=NONCE,
        doc_bytes=len("\n".join(LINES)),
        doc_lines=len(LINES),
        doc_tokens=40_000,
    )


def map_call(text: str = "\n".join(LINES), extract: str | None = None) -> list[dict]:
    return map_messages(ctx(extract) if extract else ctx(), text, chunk_index=1, chunk_total=2, overlap_percent=10)


def unique_call() -> list[dict]:
    return map_call(f"{FACT}\nrequest {uuid.uuid4()}")


# --- answers -------------------------------------------------------------------------------------


def test_map_answer_carries_the_fact_in_this_jobs_wrapper(offline_model) -> None:
    client = offline_model.client()
    assert isinstance(client, LLM)
    reply = client.complete(map_call())
    assert reply.content == f"{open_tag(NONCE)}\n{FACT}\n{close_tag(NONCE)}"
    report = parse_final_report(reply.content, NONCE)
    assert isinstance(report, FinalReport) and report.found and report.content == FACT
    assert reply.model.endswith("toolout-offline") and reply.tool_calls == []


def test_usage_is_counted_per_call(offline_model) -> None:
    reply = offline_model.client().complete(map_call())
    assert reply.usage.calls == 1 and reply.usage.cost_usd is None
    assert 30_000 < reply.usage.input_tokens < 80_000 and 20 < reply.usage.output_tokens < 80


def test_a_model_litellm_prices_gets_its_cost_counted(offline_model) -> None:
    """The offline model answers under any model name: as gpt-4o-mini, litellm prices the call from its cost map."""
    import litellm

    client = LiteLLMClient(
        "openai/gpt-4o-mini", api_base=offline_model.base_url, api_key="offline", num_retries=0, timeout=10.0
    )
    usage = client.complete(map_call()).usage
    prices = litellm.model_cost["gpt-4o-mini"]
    expected = (
        usage.input_tokens * prices["input_cost_per_token"] + usage.output_tokens * prices["output_cost_per_token"]
    )
    assert usage.input_tokens > 30_000 and usage.cost_usd == pytest.approx(expected, rel=1e-6)


def test_tool_calls_are_parsed_and_the_loop_reaches_an_answer(offline_model) -> None:
    client, messages = offline_model.client(), read_grep_messages(ctx(), handle_filename=HANDLE, root="/tmp/x")
    replies: list[LLMReply] = []
    while not replies or replies[-1].tool_calls:
        replies.append(client.complete(messages, tools=sub_agent_tools()))
        messages = messages + tool_turn(replies[-1])
    assert [r.tool_calls[0].name for r in replies[:-1]] == ["Grep", "Read"]
    grep_args = json.loads(replies[0].tool_calls[0].arguments)
    assert grep_args["handle"] == HANDLE and grep_args["regex"] is True and replies[0].content in (None, "")
    assert parse_final_report(replies[-1].content, NONCE).content == FACT


def tool_turn(reply: LLMReply) -> list[dict]:
    """The assistant's tool-call message and the results of a tiny Read/Grep over LINES."""
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in reply.tool_calls
    ]
    results = [
        {"role": "tool", "tool_call_id": c.id, "content": run_tool(c.name, json.loads(c.arguments))}
        for c in reply.tool_calls
    ]
    return ([{"role": "assistant", "content": reply.content, "tool_calls": calls}] if calls else []) + results


def run_tool(name: str, args: dict) -> str:
    import re

    if name == "Grep":
        rx = re.compile(args["pattern"], re.IGNORECASE)
        return "\n".join(f"{i}: {line}" for i, line in enumerate(LINES, 1) if rx.search(line)) or "No matches."
    return "\n".join(f"{i}: {LINES[i - 1]}" for i in range(args["offset"], args["offset"] + args["limit"]))


@pytest.mark.parametrize(
    ("malformed", "expected"),
    [
        ("no_closing_tag", f"{open_tag(NONCE)}\n{FACT}\n"),
        ("no_wrapper", FACT),
    ],
)
def test_malformed_knobs_reach_the_client(offline_model, malformed: str, expected: str) -> None:
    assert offline_model.client(f"malformed={malformed}").complete(map_call()).content == expected


def test_wrong_nonce_knob_reaches_the_client(offline_model) -> None:
    content = offline_model.client("malformed=wrong_nonce").complete(map_call()).content
    assert FACT in content and "-FINAL" in content and NONCE not in content


def test_a_lone_surrogate_in_an_answer_becomes_a_replacement_character(offline_model) -> None:
    content = offline_model.client("malformed=lone_surrogate").complete(map_call()).content
    assert FACT in content and "\ufffd" in content
    content.encode("utf-8")  # what every store, log and HTTP answer downstream does


def test_think_block_is_sent_but_litellm_moves_it_out_of_content(offline_model) -> None:
    """litellm puts a leading <think> block into reasoning_content: the engine never sees it."""
    body = {"model": "m", "messages": map_call()}
    raw = httpx.post(
        f"{offline_model.base_url}/chat/completions",
        json=body,
        headers={"X-Offline-Model": "malformed=think_block"},
        timeout=10,
    )
    assert raw.json()["choices"][0]["message"]["content"].startswith("<think>")
    content = offline_model.client("malformed=think_block").complete(map_call()).content
    assert "<think>" not in content and content.strip() == f"{open_tag(NONCE)}\n{FACT}\n{close_tag(NONCE)}"


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("retries", [0, 1])
def test_rate_limit_surfaces_as_llm_rate_limited_after_retries(offline_model, retries: int) -> None:
    with pytest.raises(LLMRateLimited) as caught:
        offline_model.client("error_rate=1;error_kinds=429", num_retries=retries).complete(unique_call())
    assert caught.value.retryable and caught.value.details["status_code"] == 429


def test_a_retry_recovers_from_one_injected_failure(offline_model) -> None:
    messages = unique_call()
    assert FACT in offline_model.client("fail_first=1;error_kinds=429", num_retries=1).complete(messages).content
    with pytest.raises(LLMRateLimited):
        offline_model.client("fail_first=1;error_kinds=429", num_retries=0).complete(unique_call())


def test_server_error_is_retryable_llm_call_error(offline_model) -> None:
    with pytest.raises(LLMCallError) as caught:
        offline_model.client("error_rate=1;error_kinds=500").complete(unique_call())
    assert type(caught.value) is LLMCallError and caught.value.retryable


def test_a_targeted_500_fails_its_chunk_through_litellms_retries_and_spares_the_others(offline_model) -> None:
    client = offline_model.client("fault=500;fault_chunks=2", num_retries=1)
    with pytest.raises(LLMCallError) as caught:
        client.complete(
            map_messages(ctx(), f"{FACT}\n{uuid.uuid4()}", chunk_index=2, chunk_total=3, overlap_percent=10)
        )
    assert caught.value.details["status_code"] == 500
    other = map_messages(ctx(), f"{FACT}\n{uuid.uuid4()}", chunk_index=3, chunk_total=3, overlap_percent=10)
    assert FACT in client.complete(other).content


def test_stall_becomes_llm_timeout(offline_model) -> None:
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        offline_model.client("error_rate=1;error_kinds=timeout", timeout=0.5).complete(unique_call())
    assert caught.value.retryable and time.monotonic() - started < 5


def test_bad_request_is_not_retryable(offline_model) -> None:
    with pytest.raises(LLMCallError) as caught:
        offline_model.client("no_such_knob=1").complete(unique_call())
    assert not caught.value.retryable and "no_such_knob" in caught.value.message


def test_unreachable_provider_is_a_retryable_call_error() -> None:
    client = LiteLLMClient(
        "openai/toolout-offline", api_base="http://127.0.0.1:9/v1", api_key="x", num_retries=0, timeout=2
    )
    with pytest.raises(LLMCallError) as caught:
        client.complete(unique_call())
    assert caught.value.retryable


def test_latency_knob_delays_the_answer(offline_model) -> None:
    started = time.monotonic()
    offline_model.client("latency_ms=300").complete(unique_call())
    assert time.monotonic() - started >= 0.3


def test_programming_errors_are_not_translated() -> None:
    assert translate_error(ValueError("bug"), "m") is None


def test_retries_without_tenacity_fail_at_construction(monkeypatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tenacity" else real(name, *a))
    with pytest.raises(RuntimeError, match="tenacity"):
        require_retry_support(1)
    require_retry_support(0)


# --- the server's own surface --------------------------------------------------------------------


def test_models_and_health_say_offline_not_llm(offline_model) -> None:
    models = httpx.get(f"{offline_model.base_url}/models").json()["data"]
    assert [m["id"] for m in models] == ["toolout-offline"] and "offline" in models[0]["owned_by"]
    assert "no LLM" in httpx.get(f"{offline_model.root}/healthz").json()["service"]


def test_raw_response_has_the_openai_shape(offline_model) -> None:
    body = {"model": "my-model", "messages": map_call(), "max_tokens": 500}
    data = httpx.post(f"{offline_model.base_url}/chat/completions", json=body, timeout=10).json()
    assert data["object"] == "chat.completion" and data["model"] == "my-model" and data["id"].startswith("chatcmpl-")
    assert data["choices"][0]["finish_reason"] == "stop" and isinstance(data["created"], int)
    usage = data["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


# --- limits & settings ---------------------------------------------------------------------------


def test_model_limits_fall_back_for_unknown_models_and_cap_output_for_known_ones() -> None:
    assert model_limits("openai/toolout-offline", default_context=128_000, default_max_output=4_096) == (128_000, 4_096)
    context, output = model_limits("gpt-4o-mini", default_context=1_000, default_max_output=4_096)
    assert context == 128_000 and output == 4_096


def test_client_from_settings_uses_the_model_settings() -> None:
    client = client_from_settings(
        Settings(model="openai/x", model_api_base="http://h/v1", model_timeout_seconds=7, model_num_retries=0)
    )
    assert (client.model, client.api_base, client.timeout, client.num_retries) == ("openai/x", "http://h/v1", 7, 0)
    assert "offline" not in repr(client)


WARM_UP_PROBE = """
import sys
from infra.llm.client import LiteLLMClient
client = LiteLLMClient("openai/any", api_base="http://127.0.0.1:9/v1", api_key="k", num_retries=0, timeout=2.0)
before = "openai.resources.chat" in sys.modules
client.warm_up()
print(before, "openai.resources.chat" in sys.modules)
"""


def test_a_warm_up_sends_nothing_and_leaves_the_first_call_no_imports_to_pay() -> None:
    """In a fresh process (this one may have imported anything): the warm-up must not reach the provider (nothing
    listens on the base URL) and must load what the first real call would otherwise import, the OpenAI SDK's
    resource classes (2 s on a busy box)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", WARM_UP_PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


HEDGED_WARM_UP_PROBE = """
import sys
from infra.llm.client import HEDGED_PATH_MODULES, LiteLLMClient
from infra.llm.hedging import HedgePolicy, Hedger
hedged = sys.argv[1] == "hedged"
hedger = Hedger(HedgePolicy()) if hedged else None
client = LiteLLMClient("openai/any", api_base="http://127.0.0.1:9/v1", api_key="k", num_retries=0, timeout=2.0,
                       hedger=hedger)
client.warm_up()
print(*[module in sys.modules for module in HEDGED_PATH_MODULES])
"""


def test_a_hedged_client_warms_its_async_path_too_and_a_plain_one_does_not() -> None:
    """A hedged call runs `acompletion` on the hedger's loop, whose first use imports litellm's async path: found
    hours into a soak as a late import and an RSS step (`infra.process.late_imports`), so a hedged client's warm-up
    imports it; a client without hedging leaves it alone. Nothing listens on the base URL: nothing is sent."""
    import subprocess
    import sys

    for kind, expected in (("hedged", ["True", "True"]), ("plain", ["False", "False"])):
        done = subprocess.run(
            [sys.executable, "-c", HEDGED_WARM_UP_PROBE, kind], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == expected, (kind, done.stdout, done.stderr[-2000:])
