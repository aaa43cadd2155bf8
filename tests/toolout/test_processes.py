"""Process orchestration helpers shared by the demo, the tests and the benchmarks."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from toolout.devstack import processes


def test_free_port_can_be_bound() -> None:
    port = processes.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        assert sock.getsockname()[1] == port


def test_wait_for_retries_through_errors_until_true_or_timeout() -> None:
    calls = []

    def flaky() -> bool:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("not yet")
        return True

    assert processes.wait_for(flaky, timeout=5, interval=0.01) and len(calls) == 3
    assert not processes.wait_for(lambda: False, timeout=0.05, interval=0.01)


def test_settings_from_env_reads_only_toolout_variables() -> None:
    settings = processes.settings_from_env({"TOOLOUT_REDIS_URL": "redis://10.0.0.1:6390/3", "PATH": "/bin"})
    assert settings.redis_url == "redis://10.0.0.1:6390/3" and settings.celery_broker_url == settings.redis_url


def test_a_service_that_exits_early_reports_its_log(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "print('boom: missing config'); raise SystemExit(3)"]
    never = processes.Service("broken", argv, {}, tmp_path / "broken.log", ready=lambda: False)
    service = never.start()
    try:
        service.wait_ready(timeout=10)
        raise AssertionError("wait_ready must raise for a process that exited")
    except RuntimeError as exc:
        assert "broken exited early" in str(exc) and "boom: missing config" in str(exc)
    finally:
        service.stop()


def test_running_starts_in_order_and_stops_everything(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    services = [processes.Service(f"s{i}", argv, {}, tmp_path / f"s{i}.log") for i in range(2)]
    with processes.running(*services, timeout=5) as started:
        assert [s.process.poll() for s in started] == [None, None]
    assert all(s.process.poll() is not None for s in services)


SLOW_TO_STOP = """
import signal, sys, time
def stopping(signum, frame):
    print("term", time.monotonic(), flush=True)
    time.sleep(0.5)  # a worker finishing its task
    print("exit", time.monotonic(), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stopping)
print("up", flush=True)
time.sleep(60)
"""


def test_stop_all_signals_every_service_before_waiting_for_any(tmp_path: Path) -> None:
    """Ctrl-C on `toolout dev` waits for the slowest part, not for the sum of them all."""
    services = [
        processes.Service(f"s{i}", [sys.executable, "-c", SLOW_TO_STOP], {}, tmp_path / f"s{i}.log") for i in range(3)
    ]
    for service in services:
        service.start()
    assert processes.wait_for(lambda: all("up" in s.tail() for s in services), timeout=20)
    processes.stop_all(services, timeout=10)
    seen = [
        dict((word, float(at)) for word, at in (line.split() for line in s.tail().splitlines()[1:])) for s in services
    ]
    assert all(s.process is not None and s.process.returncode == 0 for s in services), seen
    assert max(times["term"] for times in seen) < min(times["exit"] for times in seen), seen
