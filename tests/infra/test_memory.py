"""The process-memory knobs (`infra.memory`): applied on glibc, skipped when off, and the trimming thread stops."""

from __future__ import annotations

import threading
import time

import pytest

from infra import memory


def trimmers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "toolout-malloc-trim"]


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_on_glibc_the_arenas_are_capped_and_free_pages_handed_back() -> None:
    assert memory.limit_arenas(2)
    blocks = [bytearray(64 * 1024 - 64) for _ in range(400)]  # ~25 MB of the heap (below mmap's threshold)
    del blocks[::2]  # every other one freed: holes between live blocks, which free() alone keeps resident
    assert memory.trim(), "malloc_trim released nothing from a heap full of free pages"
    del blocks


def test_settle_caps_and_starts_trimming_on_glibc() -> None:
    stop = memory.settle(2, 3600)
    try:
        assert len(trimmers()) == (1 if memory._glibc() is not None else 0)
    finally:
        stop()


def test_zero_turns_each_knob_off() -> None:
    assert not memory.limit_arenas(0)
    before = len(trimmers())
    stop = memory.settle(0, 0)
    assert len(trimmers()) == before
    stop()


def test_the_trimming_thread_trims_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    if memory._glibc() is None:
        pytest.skip("glibc only")
    calls: list[float] = []
    monkeypatch.setattr(memory, "trim", lambda: calls.append(time.monotonic()) is None)
    stop = memory.start_trimming(0.01)
    deadline = time.monotonic() + 10
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert len(calls) >= 3
    for thread in trimmers():
        thread.join(5)
    assert trimmers() == []
