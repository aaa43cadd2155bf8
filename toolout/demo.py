"""`toolout demo`: the whole system, offline, on this machine, in about a minute.

Starts the offline model, the API and worker processes; generates a 20 MB JSON tool output and a
50 MB service log, each with a planted fact; uploads them as an agent would; runs extractions
with live progress; prints the ABSTRACT results and job statistics; then shuts everything down.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from infra.settings import REPO_ROOT, get_settings
from toolout import datasets, processes
from toolout.client import TERMINAL, ToolOutClient

Job = dict[str, Any]
"""A job (or upload answer) as the API returns it."""

console = Console(width=None if sys.stdout.isatty() else 132)
"""Logs and CI capture the demo too: without a terminal, print wide enough for the stats table."""


def demo_env(model_port: int, var: Path) -> dict[str, str]:
    """Every process of the demo sees the same wiring: offline model, local blob dir, demo limits.

    Authentication is off (dev mode, announced by the API at start-up): the demo's processes are
    local children that exit with it, and it must run on a fresh machine with no key provisioned.
    """
    return {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TOOLOUT_AUTH_MODE": "dev",
        "TOOLOUT_MODEL": "openai/toolout-offline",
        "TOOLOUT_MODEL_API_BASE": f"http://127.0.0.1:{model_port}/v1",
        "TOOLOUT_MODEL_API_KEY": "offline",
        "TOOLOUT_BLOB_STORE": f"file://{var / 'blobs'}",
    }


def start_stack(var: Path, worker_count: int) -> tuple[list[processes.Service], str, dict[str, str]]:
    model_port, api_port = processes.free_port(), processes.free_port()
    env = demo_env(model_port, var)
    logs = var / "logs"
    names = [f"demo-worker-{i + 1}" for i in range(worker_count)]
    services = [processes.offline_model(model_port, env, logs), processes.api(api_port, env, logs)]
    services += [processes.worker(name, env, logs) for name in names]
    services[-1].ready = processes.workers_answering(names, env)
    return services, f"http://127.0.0.1:{api_port}", env


def upload(
    client: ToolOutClient, session: str, label: str, blocks: Iterable[bytes], tool_name: str, tool_args: str
) -> Job:
    started = time.perf_counter()
    meta = client.store(session, blocks, tool_name=tool_name, tool_args=tool_args)
    seconds = time.perf_counter() - started
    console.print(
        f"[bold]{label}[/]: stored {meta['bytes'] / 1e6:.1f} MB in {seconds:.1f}s "
        f"({meta['lines']} lines, {meta['tokens']} tokens, avg line {meta['avg_line_bytes']:.0f} bytes)"
    )
    console.print(Panel(meta["message"] or "(not oversized)", title="what the agent's model sees", expand=False))
    return meta


def follow(client: ToolOutClient, jobs: dict[str, str]) -> dict[str, Job]:
    """Poll every job, drawing one progress bar each, until all are terminal."""
    done: dict[str, Job] = {}
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        bars = {job_id: progress.add_task(label, total=None, state="queued") for job_id, label in jobs.items()}
        while len(done) < len(jobs):
            for job_id in jobs.keys() - done.keys():
                job = client.job(job_id)
                progress.update(bars[job_id], **_bar(job))
                if job["status"] in TERMINAL:
                    done[job_id] = job
            time.sleep(0.2)
    return done


def _bar(job: Job) -> dict[str, Any]:
    if job["mode_used"] == "read-grep":
        state = f"{job['status']} · read-grep · {job['agent_turns']} turns, {job['agent_tool_calls']} tool calls"
        return {"total": 1, "completed": int(job["status"] in TERMINAL), "state": state}
    state = f"{job['status']} · {job['mode_used'] or 'routing'}"
    return {"total": job["chunks_total"] or None, "completed": job["chunks_done"], "state": state}


def report(jobs: dict[str, str], results: dict[str, Job], needles: dict[str, str]) -> bool:
    table = Table("job", "status", "strategy", "chunks", "LLM calls", "tokens in/out", "seconds", "fact found")
    reasons = []
    ok = True
    for job_id, label in jobs.items():
        job = results[job_id]
        found = needles[job_id] in (job.get("result") or "")
        ok &= found and job["status"] == "succeeded"
        console.print(Panel(_clip(job.get("result") or job.get("error") or ""), title=label, expand=False))
        usage = job["usage"]
        seconds = (job["finished_at"] or 0) - job["created_at"]
        table.add_row(
            label,
            job["status"],
            job["mode_used"] or "-",
            f"{job['chunks_done']}/{job['chunks_total']}",
            str(usage["calls"]),
            f"{usage['input_tokens']:,}/{usage['output_tokens']:,}",
            f"{seconds:.1f}",
            "yes" if found else "NO",
        )
        reasons.append(
            f"{label}: {job['routing_reason'] or '-'}"
            + (f" — fallback: {job['fallback_reason']}" if job.get("fallback_reason") else "")
        )
    console.print(table)
    console.print("routing: " + "\n         ".join(reasons))
    return ok


def _clip(text: str, limit: int = 1600) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


Source = tuple[Callable[[], Iterable[bytes]], str, str]
"""How to generate one tool output, and the tool name and arguments it claims to come from."""


def sources(json_mb: int, log_mb: int) -> dict[str, Source]:
    return {
        "JSON": (
            lambda: datasets.json_orders(json_mb * 10**6),
            "orders_api.list",
            '{"since": "2026-01-01", "limit": 500000}',
        ),
        "log": (lambda: datasets.service_log(log_mb * 10**6), "logs.fetch", '{"service": "*", "range": "30d"}'),
    }


CASES = [("JSON", "auto"), ("log", "read-grep"), ("log", "full-chunked")]
"""(output, mode) of each demo job; the output's planted fact decides the request."""


def planted(kind: str) -> datasets.Planted:
    return datasets.ORDER_NEEDLE if kind == "JSON" else datasets.POOL_INCIDENT


def compare_embedded(
    env: dict[str, str], made: dict[str, Source], handles: dict[str, str], served: dict[str, Job]
) -> bool:
    """The same extractions with `toolout.local`: is each answer the service's, byte for byte?"""
    from toolout.local import LocalToolOut

    table = Table("job", "service s", "embedded s", "same ABSTRACT")
    model = (env["TOOLOUT_MODEL"], env["TOOLOUT_MODEL_API_BASE"], env["TOOLOUT_MODEL_API_KEY"])
    same_everywhere = True
    with LocalToolOut(model[0], api_base=model[1], api_key=model[2]) as local:
        ours = {
            kind: local.store(b"".join(make()), tool_name=tool, tool_args=args).handle
            for kind, (make, tool, args) in made.items()
        }
        for label, job in served.items():
            kind = label.split(" ")[0]
            started = time.perf_counter()
            result = local.extract(ours[kind], job["extract"], job["mode_requested"])
            same = result.text == (job["result"] or "").replace(handles[kind], ours[kind])
            same_everywhere &= same
            seconds = f"{time.perf_counter() - started:.1f}"
            table.add_row(label, f"{job['finished_at'] - job['created_at']:.1f}", seconds, "yes" if same else "NO")
    console.print(table)
    return same_everywhere


def run_demo(*, json_mb: int = 20, log_mb: int = 50, worker_count: int = 1, embedded: bool = False) -> int:
    settings = get_settings()
    processes.ensure_redis(settings.redis_url)
    var = REPO_ROOT / "var" / "demo"
    services, base_url, env = start_stack(var, worker_count)
    made = sources(json_mb, log_mb)
    console.rule("toolout demo — offline model (deterministic, no LLM), API, Celery worker, Redis, local blob store")
    with processes.running(*services), ToolOutClient(base_url) as client:
        console.print(f"API at {base_url} (docs at {base_url}/docs); logs in {var / 'logs'}")
        session = client.create_session()
        handles = {
            kind: upload(client, session, f"{kind} tool output", make(), tool, args)["handle"]
            for kind, (make, tool, args) in made.items()
        }
        jobs = {
            client.submit(handles[kind], planted(kind).request, mode)["id"]: f"{kind} · {mode}" for kind, mode in CASES
        }
        needles = {job_id: planted(label.split(" ")[0]).needle for job_id, label in jobs.items()}
        results = follow(client, jobs)
        ok = report(jobs, results, needles)
        if embedded:
            ok &= compare_embedded(env, made, handles, {jobs[job_id]: job for job_id, job in results.items()})
        client.delete_session(session)
    console.rule(
        "[green]demo passed: every job found its planted fact"
        if ok
        else "[red]demo failed: a planted fact was not found (or the embedded mode answered otherwise)"
    )
    return 0 if ok else 1
