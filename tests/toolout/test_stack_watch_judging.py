"""How a long run is judged (`toolout.devstack.stack_watch`): RSS slopes after warm-up, a process alone, keys left."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import pytest

from toolout.devstack.stack_watch import (
    LogWatch,
    left_behind,
    leftovers,
    memory_parts,
    own_rss_mb,
    rss_growth,
    rss_mb,
    slope_mb_per_minute,
    slopes,
)


@dataclass
class Sample:
    at: float
    api_mb: float
    workers_mb: list[float]
    workers_own_mb: list[float]


def test_the_slope_is_mb_per_minute_and_ignores_noise_around_a_flat_line() -> None:
    assert slope_mb_per_minute([(t * 60.0, 300 + 0.8 * t) for t in range(30)]) == pytest.approx(0.8)
    assert slope_mb_per_minute([(t * 10.0, 300 + (5 if t % 2 else -5)) for t in range(360)]) == pytest.approx(
        0, abs=0.01
    )
    assert slope_mb_per_minute([(0.0, 300.0)]) == 0.0
    assert slope_mb_per_minute([(5.0, 300.0), (5.0, 310.0)]) == 0.0


def test_slopes_judge_the_window_after_warm_up_and_each_worker_alone() -> None:
    samples = [
        Sample(t * 60.0, 200 + 10 * t if t < 10 else 300 + 0.05 * t, [900 + (300 if t % 2 else 0)], [340 + 0.5 * t])
        for t in range(60)
    ]
    found = slopes(samples, since=600, until=3600)
    assert found["api"] == pytest.approx(0.05, abs=0.001)  # the warm-up's climb is not in the window
    assert found["worker-1"] == pytest.approx(0.5, abs=0.001)
    assert "worker-1+children" in found
    assert slopes([], since=0, until=60) == {"api": 0.0}


def test_growth_is_a_worker_alone_and_with_its_children_apart() -> None:
    """The seventh soak hour printed -424 MB for a worker that grew +2.4: its children had ended by the last sample."""
    warm, end = Sample(600, 393.3, [840.0], [332.0]), Sample(3600, 394.4, [415.9], [334.4])
    found = rss_growth(warm, end)
    assert found["api"] == pytest.approx(1.1) and found["worker-1"] == pytest.approx(2.4)
    assert found["worker-1+children"] == pytest.approx(-424.1)
    assert rss_growth(Sample(0, 1, [5.0], []), Sample(60, 2, [7.0], [])) == {"api": 1, "worker-1+children": 2.0}


def test_leftovers_split_keys_without_a_ttl_from_those_of_deleted_sessions(redis_client) -> None:
    session, handle, stranger = (str(uuid.uuid4()) for _ in range(3))
    redis_client.set("toolout:metrics:forever", 1)
    redis_client.set("toolout:query:t:abc:loaded", f"sessions/{session}/{handle}.duckdb/", ex=600)
    redis_client.set(f"toolout:{{{handle}}}:output", "{}", ex=600)
    redis_client.set(f"toolout:{{{stranger}}}:output", "{}", ex=600)
    left = {key for key in redis_client.scan_iter()}
    found = leftovers(redis_client, left, owners={session, handle})
    assert found["without_ttl"] == ["toolout:metrics:forever"]
    assert found["ttl_of_deleted"] == sorted([f"toolout:{{{handle}}}:output", "toolout:query:t:abc:loaded"])
    assert found["ttl_other"] == [f"toolout:{{{stranger}}}:output"]


def test_counters_that_appear_during_a_run_are_not_left_behind_state(redis_client) -> None:
    """A run's first hedge writes the hedge counter's first slot copy and the set naming its slots: counters."""
    redis_client.set("toolout:{baseline}:session", 1)
    baseline = {key for key in redis_client.scan_iter()}
    redis_client.hset("toolout:{12ae}:metrics:hedges", "sent", 1)
    redis_client.sadd("toolout:slots:metrics:hedges", "12ae")
    redis_client.hset("toolout:{12ae}:metrics:usage", "calls", 1)
    redis_client.set("toolout:{deadbeef}:session", 1)  # state: left behind
    assert left_behind(redis_client, baseline) == {"toolout:{deadbeef}:session"}


def test_a_process_alone_is_measured_without_its_children() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(50_000_000); time.sleep(30)"])
    try:
        deadline = time.monotonic() + 20
        while rss_mb([os.getpid()]) - own_rss_mb(os.getpid()) < 40 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rss_mb([os.getpid()]) - own_rss_mb(os.getpid()) >= 40, "the child's 50 MB were not left out"
    finally:
        child.kill()
        child.wait()
    assert own_rss_mb(child.pid) == 0.0


def test_memory_parts_tell_a_heap_step_from_a_thread_or_a_child() -> None:
    script = (
        "import sys, threading, time, subprocess\n"
        "print('ready', flush=True); sys.stdin.readline()\n"
        "heap = bytearray(60_000_000)\n"
        "for _ in range(3): threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "print('grown', flush=True); time.sleep(30)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdin is not None
        process.stdout.readline()
        before = memory_parts(process.pid)
        process.stdin.write("\n")
        process.stdin.flush()
        process.stdout.readline()
        after = memory_parts(process.pid)
    finally:
        process.kill()
        process.wait()
    assert after["anon_mb"] - before["anon_mb"] >= 55 and abs(after["file_mb"] - before["file_mb"]) < 20
    assert (after["threads"] - before["threads"], after["children"] - before["children"]) == (3, 1)
    assert after["fds"] >= 3 and memory_parts(process.pid) == {}


def test_a_logged_traceback_is_reported_with_the_exception_it_ended_in(tmp_path) -> None:
    log = tmp_path / "api.log"
    log.write_text("INFO: started\n")
    watch = LogWatch([log])
    with log.open("a") as out:
        out.write("ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n")
        out.write('  File "x.py", line 1, in f\n    raise ScratchInUseError\nScratchInUseError: error code -10\n')
    assert watch.problems() == {
        "api.log": [
            "ERROR:    Exception in ASGI application",
            "Traceback (most recent call last): -> ScratchInUseError: error code -10",
        ]
    }
