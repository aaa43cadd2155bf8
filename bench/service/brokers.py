"""B1: what a job costs on RabbitMQ as the Celery broker, against the Redis broker, measured in the same run.

    python -m bench.service.brokers [--runs 7] [--chunks 4] [--rounds 2] [--amqp-url amqp://guest:guest@127.0.0.1:5672]

The same stack twice over (offline model at 0 ms with short answers, API, one Celery worker at concurrency 8,
state in Redis), once with the Redis broker and once with RabbitMQ (quorum queues, publisher confirms: the
production settings of `workers.celery.app`), in alternating rounds so drift hits both. A --chunks job at zero
model latency is nearly all orchestration, so its wall time is the per-job overhead a broker adds.
Target: RabbitMQ's median job within 1.2x of Redis's. Printed beside the seconds: model calls and tokens per job.
Needs rabbitmqctl (a fresh vhost per round). Exit status 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from bench.report import print_table, verdict
from bench.service.harness import SHORT_ANSWERS, SMALL_WINDOW, running_stack
from bench.service.jobs import sized_log, small_limits, timed_job, upload
from toolout.devstack import datasets, processes

TARGET = 1.2
VHOST = "toolout-bench-brokers"


def fresh_vhost(amqp_url: str) -> str:
    for args in (
        ["delete_vhost", VHOST],
        ["add_vhost", VHOST],
        ["set_permissions", "-p", VHOST, "guest", ".*", ".*", ".*"],
    ):
        subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, check=args[0] != "delete_vhost", timeout=60)
    return f"{amqp_url}/{VHOST}"


def jobs_on(broker: dict[str, str], redis_url: str, doc: bytes, runs: int) -> list[dict]:
    """`runs` timed jobs (after one warm-up) on a stack whose broker `broker` names (empty: its Redis)."""
    extract = datasets.POOL_INCIDENT.request
    stack = running_stack(
        redis_url,
        model={"TOOLOUT_OFFLINE_LATENCY_MS": "0", **SHORT_ANSWERS},
        worker={"concurrency": 8},
        extra={**SMALL_WINDOW, **broker},
    )
    with stack as running, running.client() as client:
        handle = upload(client, doc)["handle"]
        timed_job(client, handle, extract, "full-chunked")
        results = []
        for _ in range(runs):
            seconds, job = timed_job(client, handle, extract, "full-chunked")
            if job["status"] != "succeeded":
                raise RuntimeError(f"a bench job did not succeed: {job}")
            results.append({"seconds": seconds, "calls": job["usage"]["calls"], "tokens": job["usage"]["input_tokens"]})
        return results


def row(name: str, jobs: list[dict]) -> tuple[str, str, str, str]:
    seconds = statistics.median(j["seconds"] for j in jobs)
    calls, tokens = statistics.median(j["calls"] for j in jobs), statistics.median(j["tokens"] for j in jobs)
    return (
        f"job on {name} (median of {len(jobs)})",
        f"{seconds * 1000:.0f} ms, {calls:.0f} calls, {tokens:.0f} tokens in",
        "",
        "",
    )


def main() -> int:
    args = parse_args()
    processes.ensure_redis(args.redis_url)
    doc = sized_log(args.chunks, datasets.POOL_INCIDENT.request, small_limits())
    on: dict[str, list[dict]] = {"Redis": [], "RabbitMQ": []}
    started = time.perf_counter()
    for _ in range(args.rounds):
        on["Redis"] += jobs_on({}, args.redis_url, doc, args.runs)
        on["RabbitMQ"] += jobs_on({"TOOLOUT_BROKER_URL": fresh_vhost(args.amqp_url)}, args.redis_url, doc, args.runs)
    ratio = statistics.median(j["seconds"] for j in on["RabbitMQ"]) / statistics.median(
        j["seconds"] for j in on["Redis"]
    )
    print(f"B1: a {args.chunks}-chunk job at 0 ms model latency, by broker ({time.perf_counter() - started:.0f} s)")
    rows = [("measure", "value", "target", "result"), row("Redis", on["Redis"]), row("RabbitMQ", on["RabbitMQ"])]
    rows.append(("RabbitMQ / Redis", f"{ratio:.2f}x", f"<= {TARGET}x", verdict(ratio <= TARGET)))
    print_table(rows)
    return 0 if ratio <= TARGET else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7, help="timed jobs per stack and round")
    parser.add_argument("--rounds", type=int, default=2, help="Redis then RabbitMQ, this many times")
    parser.add_argument("--chunks", type=int, default=4, help="chunks per job")
    parser.add_argument("--amqp-url", default="amqp://guest:guest@127.0.0.1:5672", help="RabbitMQ, without a vhost")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9", help="a Redis database this bench may flush")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
