"""docs/spec/tools.md §Compaction: past a token budget, the oldest tool results become `output_ref` references."""

from __future__ import annotations

from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import call, sync_kit
from toolout.toolkit import tool
from toolout.toolkit.compaction import (
    MESSAGE_OVERHEAD_TOKENS,
    is_compacted,
    message_tokens,
    reference_text,
    select_for_compaction,
)


def words(text: str) -> int:
    """A transparent counter for the rules: one token per word."""
    return len(text.split())


def tool_message(call_id: str, size: int) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": " ".join(["word"] * size)}


def conversation() -> list[dict]:
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b"), call("c")]},
        tool_message("call_a", 300),
        tool_message("call_b", 300),
        tool_message("call_c", 300),
    ]


def test_message_tokens_count_content_tool_calls_and_overhead() -> None:
    assert message_tokens({"role": "user", "content": "one two"}, words) == 2 + MESSAGE_OVERHEAD_TOKENS
    assistant = {"role": "assistant", "content": None, "tool_calls": [call("lookup", {"q": "x y"})]}
    assert message_tokens(assistant, words) == 3 + MESSAGE_OVERHEAD_TOKENS  # 'lookup{"q":', '"x', 'y"}'


def test_nothing_is_compacted_within_the_budget() -> None:
    assert select_for_compaction(conversation(), 10_000, words) == []


def test_the_oldest_results_go_first_and_only_as_many_as_needed() -> None:
    messages = conversation()
    total = sum(message_tokens(m, words) for m in messages)
    assert select_for_compaction(messages, total - 100, words) == [3]
    assert select_for_compaction(messages, total - 400, words) == [3, 4]


def test_the_last_results_are_kept_even_over_budget() -> None:
    assert select_for_compaction(conversation(), 10, words) == [3, 4]
    assert select_for_compaction(conversation(), 10, words, keep_last=0) == [3, 4, 5]
    assert select_for_compaction(conversation(), 10, words, keep_last=3) == []


def test_small_and_already_compacted_results_are_skipped() -> None:
    messages = conversation()
    messages[3] = {"role": "tool", "tool_call_id": "call_a", "content": reference_text("h", 10, 1)}
    messages[4] = tool_message("call_b", 5)
    assert is_compacted(messages[3])
    assert select_for_compaction(messages, 10, words, keep_last=0) == [5]


def test_the_toolkit_replaces_results_with_references_the_model_can_read_back() -> None:
    fake = FakeService()

    @tool
    def page(n: int) -> str:
        """A page of text."""
        return "\n".join(f"page {n} line {i}" for i in range(200))

    kit = sync_kit(fake, [page])
    history: list = [{"role": "user", "content": "read three pages"}]
    for n in (1, 2, 3):
        history.append({"role": "assistant", "content": None, "tool_calls": [call("page", {"n": n}, f"p{n}")]})
        history += kit.handle([call("page", {"n": n}, f"p{n}")])
    foreign = {"role": "tool", "tool_call_id": "x9", "content": "\n".join(["from elsewhere"] * 300)}
    history.insert(1, {"role": "assistant", "content": None, "tool_calls": [call("legacy", {}, "x9")]})
    history.insert(2, foreign)
    uploads_before = len([p for p in fake.paths() if p.endswith("/outputs")])
    compacted = kit.compact(history, budget_tokens=3000)
    refs = [m["content"] for m in compacted if m.get("role") == "tool" and is_compacted(m)]
    assert len(refs) >= 2 and compacted[-1] == history[-1]  # the newest result is kept
    assert [p for p in fake.paths() if p.endswith("/outputs")][uploads_before:] != []  # the foreign one was stored
    p1 = next(m for m in compacted if m.get("tool_call_id") == "p1")
    ref = p1["content"].split("]")[0].removeprefix("[output_ref ")
    assert p1["content"] == reference_text(ref, len(history[4]["content"]), 200)
    (read,) = kit.handle([call("tool_output_cache", {"ref_id": ref, "offset": 200, "limit": 1})])
    assert read["content"].splitlines()[0] == "   200\tpage 1 line 199"
    assert history[4]["content"].startswith("page 1 line 0")  # the caller's list is not modified
