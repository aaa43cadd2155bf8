"""How long `toolout dev` takes to print its banner, and the CPU each of its processes burned until then.

    python -m bench.micro.dev_start [--runs 3] [--redis-url URL] [--python PATH]

Each run starts `toolout dev` on a free port and an empty Redis database (`--redis-url`'s server, the highest
empty db; it is flushed after), reads its output until the banner's last line, and then reads from /proc the
CPU seconds (user + system, children that exited included) of the launcher and of each process it started
(a process's descendants counted with it), before stopping it with SIGTERM (what Ctrl-C does). On 2 cores
CPU is what startup waits for: the sum is the number to bring down, the split says where.

Target (issue 31): the banner within 10 s of the process's start on an idle box; the load average is printed
beside the numbers because a busy box says nothing about them.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import redis

from toolout.devstack import processes

TARGET_SECONDS = 10.0
LAST_BANNER_LINE = "API docs:"
TICK = os.sysconf("SC_CLK_TCK")
ROLES = {"offline-model": "offline model", " api ": "API", " worker ": "worker"}


def free_db(base_url: str) -> str:
    """The highest-numbered empty database of the Redis at `base_url` (a run must not meet another's keys)."""
    server = base_url.rsplit("/", 1)[0] if base_url.count("/") > 2 else base_url
    for db in range(15, 0, -1):
        url = f"{server}/{db}"
        if redis.Redis.from_url(url).dbsize() == 0:
            return url
    raise SystemExit(f"no empty database on {server}")


def stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its waited-for children), or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), sum(int(v) for v in fields[11:15]) / TICK


def cpu_by_role(root: int) -> dict[str, float]:
    """CPU seconds of the launcher and of each child it started, every descendant counted with its child."""
    table = {pid: s for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if (s := stat(pid))}
    totals = {"launcher": table.get(root, (0, 0.0))[1]}
    for pid, (parent, _) in table.items():
        if parent == root:
            totals[role(pid)] = totals.get(role(pid), 0.0) + tree_cpu(pid, table)
    return totals


def tree_cpu(pid: int, table: dict[int, tuple[int, float]]) -> float:
    return table[pid][1] + sum(tree_cpu(child, table) for child, (parent, _) in table.items() if parent == pid)


def role(pid: int) -> str:
    try:
        argv = " " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() + " "
    except OSError:
        return "other"
    return next((name for key, name in ROLES.items() if key in argv), "other")


def one_run(python: str, redis_url: str) -> tuple[float, dict[str, float]]:
    """Seconds from the launcher's start to its banner's last line, and the CPU seconds by role at that moment."""
    argv = [python, "-m", "toolout.cli", "dev", "--port", str(processes.free_port()), "--redis", redis_url]
    began = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(LAST_BANNER_LINE):
                return time.monotonic() - began, cpu_by_role(process.pid)
        raise SystemExit(f"toolout dev exited ({process.wait()}) before its banner")
    finally:
        process.send_signal(signal.SIGTERM)  # as Ctrl-C; a SIGINT is ignored when this bench runs in the background
        process.wait(60)
        redis.Redis.from_url(redis_url).flushdb()


def report(runs: list[tuple[float, dict[str, float]]]) -> None:
    roles = sorted({name for _, cpu in runs for name in cpu})
    print("run  banner_s  " + "  ".join(f"{r:>13}" for r in roles) + "  total_cpu_s")
    for n, (seconds, cpu) in enumerate(runs, 1):
        cells = "  ".join(f"{cpu.get(r, 0.0):13.2f}" for r in roles)
        print(f"{n:3d}  {seconds:8.2f}  {cells}  {sum(cpu.values()):11.2f}")
    median = statistics.median(seconds for seconds, _ in runs)
    verdict = "PASS" if median < TARGET_SECONDS else "MISS"
    print(f"median {median:.2f} s to the banner (target < {TARGET_SECONDS:.0f} s): {verdict}; load {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--redis-url", default=os.environ.get("TOOLOUT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose toolout to start")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    redis_url = free_db(args.redis_url)
    report([one_run(args.python, redis_url) for _ in range(args.runs)])


if __name__ == "__main__":
    main()
