"""Redis round trips of a job (`bench.profiles.fanout`): per task from the probe's events, per client from
redis-cli monitor."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from toolout.devstack.stack import Stack

Event = dict[str, Any]


def script_names() -> dict[str, str]:
    """sha1 -> name of each Lua script of toolout, Celery's Redis backend and kombu (EVALSHA shows only the sha)."""
    import hashlib

    import celery.backends.redis as backend
    import kombu.transport.redis as transport

    from infra.stores.jobs.scripts import script_source
    from infra.stores.jobs.stores import JOB_SCRIPTS

    names = {
        hashlib.sha1(script_source(part.package, name).encode()).hexdigest(): f"lua {name}"
        for part in JOB_SCRIPTS
        for name in part.names
    }
    for label, module in (("celery lua", backend), ("kombu lua", transport)):
        for name, text in vars(module).items():
            if name.isupper() and isinstance(text, str) and ("redis.call" in text or "KEYS[" in text):
                names[hashlib.sha1(text.encode()).hexdigest()] = f"{label} {name}"
    return names


SCRIPTS = script_names()


def key_kind(key: str) -> str:
    """What a Redis key (or EVALSHA's sha) belongs to, without its ids."""
    key = key[2:-1] if key.startswith(("b'", 'b"')) else key
    if key in SCRIPTS:
        return SCRIPTS[key]
    if key.startswith("toolout:"):
        rest = re.sub(r"[0-9a-f-]{36}", "*", key.removeprefix("toolout:"))
        tagged = re.match(r"\{[^}]*\}:([^:]+)", rest)  # a job's or session's keys, or a per-slot index copy
        return "toolout:{*}:" + tagged.group(1) if tagged else "toolout:" + rest.split(":")[0]
    if key.endswith((".j", ".t")) or key.startswith("celery-taskset-meta-"):
        return "result backend: chord " + (key.rsplit(".", 1)[-1] if key.endswith((".j", ".t")) else "group meta")
    if key.startswith("celery-task-meta-"):
        return "result backend: task meta"
    if key.startswith("unacked") or key.startswith("_kombu"):
        return "kombu: " + key.split(".")[0].split("_mutex")[0]
    if key in ("map", "reduce", "extract", "agent"):
        return f"kombu: queue {key}"
    return key[:24] or "(no key)"


def round_trip_rows(events: list[Event]) -> list[tuple[str, str, str, str]]:
    tasks = collections.Counter(e["task"] for e in events if e["ev"] == "prerun")
    trips = collections.Counter(
        (
            e["task"],
            e["phase"],
            f"{e['cmd'].split(',')[0] if e['kind'] == 'command' else 'PIPELINE ' + e['cmd']} {key_kind(e['key'])}",
        )
        for e in events
        if e["ev"] == "redis" and e.get("task")
    )
    rows = [("task (count): phase", "round trip", "per task", "")]
    for (task, phase, what), count in sorted(trips.items()):
        rows.append((f"{task} ({tasks[task]}): {phase}", what[:90], f"{count / max(1, tasks[task]):.2f}", ""))
    for task, count in sorted(tasks.items()):
        total = sum(c for (t, _, _), c in trips.items() if t == task)
        rows.append((f"{task}: all", "", f"{total / count:.2f}", ""))
    return rows


class monitored:
    """`redis-cli monitor` on the bench's Redis while the block runs; its output file."""

    def __init__(self, url: str, path: Path) -> None:
        self.port = str(redis.Redis.from_url(url).connection_pool.connection_kwargs.get("port", 6379))
        self.path = path

    def __enter__(self) -> Path:
        self.log = self.path.open("w")
        self.process = subprocess.Popen(["redis-cli", "-p", self.port, "monitor"], stdout=self.log)
        time.sleep(0.3)
        return self.path

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        self.process.wait(5)
        self.log.close()


def socket_owners(stack: Stack) -> dict[str, str]:
    """Client port -> process name, for the stack's processes and this one (`ss -tnp`)."""
    names = {s.process.pid: s.name for s in stack.services if s.process is not None}
    names[os.getpid()] = "bench client"
    owners = {}
    for line in subprocess.run(["ss", "-tnp"], capture_output=True, text=True, check=False).stdout.splitlines():
        found = re.search(r"\S+:(\d+)\s+\S+:\d+\s+users:\(\(\"[^\"]+\",pid=(\d+)", line)
        if found and int(found.group(2)) in names:
            owners[found.group(1)] = names[int(found.group(2))]
    return owners


def monitor_rows(text: str, owners: dict[str, str], db: int) -> list[tuple[str, str, str, str]]:
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in text.splitlines():
        found = re.match(r'[\d.]+ \[(\d+) [\d.]+:(\d+)\] "(\w+)"(?: "([^"]*)")?', line)
        if found and int(found.group(1)) == db:
            owner = owners.get(found.group(2), f"port {found.group(2)}")
            counts[(owner, f"{found.group(3).upper()} {key_kind(found.group(4) or '')}")] += 1
    rows = [("client", "command", "count", "")]
    for owner in sorted({o for o, _ in counts}):
        mine = {w: c for (o, w), c in counts.items() if o == owner}
        rows.append((owner, "ALL", str(sum(mine.values())), ""))
        rows += [("", what, str(count), "") for what, count in sorted(mine.items(), key=lambda i: -i[1])[:14]]
    return rows
