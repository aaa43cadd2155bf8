"""`toolout demo`: the whole system, offline, on this machine, in about a minute.

Starts the offline model, the API and worker processes; generates a 20 MB JSON tool output and a
50 MB service log, each with a planted fact; uploads them as an agent would; runs extractions
with live progress — on the JSON, `auto` (the query strategy, where this build has it) beside
full-chunked, for the planted order and for "how many orders have status refunded, and their
total_cents?" whose exact answer the demo counts from the generated data; on the log, read-grep
beside full-chunked — prints the ABSTRACT results and job statistics side by side; then shuts
everything down.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from infra.settings import DATA_DIR, get_settings
from toolout.client import TERMINAL, ToolOutClient
from toolout.devstack import datasets, processes

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
    if job["mode_used"] in ("read-grep", "query"):
        turns, calls = job.get("agent_turns", 0), job.get("agent_tool_calls", 0)
        state = f"{job['status']} · {job['mode_used']} · {turns} turns, {calls} tool calls"
        return {"total": 1, "completed": int(job["status"] in TERMINAL), "state": state}
    state = f"{job['status']} · {job['mode_used'] or 'routing'}"
    return {"total": job["chunks_total"] or None, "completed": job["chunks_done"], "state": state}


def report(jobs: dict[str, Case], results: dict[str, Job], exact: tuple[int, int]) -> bool:
    """The jobs side by side; the demo passes when every lookup found its fact and a query count is exact."""
    table = Table("job", "status", "strategy", "chunks", "LLM calls", "tokens in/out", "seconds", "right")
    table.columns[0].no_wrap = True
    reasons = []
    ok = True
    for job_id, case in jobs.items():
        job = results[job_id]
        verdict, required = judge(case, job, exact)
        ok &= job["status"] == "succeeded" and (verdict != "NO" or not required)
        console.print(Panel(_clip(job.get("result") or job.get("error") or ""), title=case.label, expand=False))
        usage = job["usage"]
        table.add_row(
            case.label,
            job["status"],
            job["mode_used"] or "-",
            f"{job['chunks_done']}/{job['chunks_total']}",
            str(usage["calls"]),
            f"{usage['input_tokens']:,}/{usage['output_tokens']:,}",
            f"{job_seconds(job):.1f}",
            verdict if required else f"{verdict.lower()} (not required)",
        )
        reasons.append(
            f"{case.label}: {job['routing_reason'] or '-'}"
            + (f" — fallback: {job['fallback_reason']}" if job.get("fallback_reason") else "")
        )
    console.print(table)
    console.print("routing: " + "\n         ".join(reasons))
    console.print(compare(jobs, results, exact))
    return ok


def judge(case: Case, job: Job, exact: tuple[int, int]) -> tuple[str, bool]:
    """(is the answer right, must it be): lookups must find their fact; counts must be exact when `query` ran."""
    text = job.get("result") or ""
    if case.question == "lookup":
        return ("yes" if planted(case.kind).needle in text else "NO"), True
    right = all(_mentions(text, number) for number in exact)
    return ("exact" if right else "NO"), job["mode_used"] == "query"


def _mentions(text: str, number: int) -> bool:
    """The number, written with or without thousands separators, as a whole token."""
    plain = re.sub(r"(?<=\d)[, _](?=\d{3}\b)", "", text)
    return re.search(rf"(?<![\d.]){number}(?![\d.])", plain) is not None


def job_seconds(job: Job) -> float:
    return float((job["finished_at"] or 0) - job["created_at"])


def compare(jobs: dict[str, Case], results: dict[str, Job], exact: tuple[int, int]) -> Panel:
    """Auto beside full-chunked on the JSON lookup (tokens, time), and the count each answered beside the truth."""
    by = {(c.kind, c.question, c.mode): results[job_id] for job_id, c in jobs.items()}
    auto, full = by[("JSON", "lookup", "auto")], by[("JSON", "lookup", "full-chunked")]
    tokens = auto["usage"]["input_tokens"] / max(1, full["usage"]["input_tokens"])
    lines = [
        f"JSON lookup: auto ran {auto['mode_used']} with {auto['usage']['input_tokens']:,} input tokens "
        f"({tokens:.2%} of full-chunked's {full['usage']['input_tokens']:,}) in {job_seconds(auto):.1f}s "
        f"({job_seconds(auto) / max(0.001, job_seconds(full)):.1%} of full-chunked's {job_seconds(full):.1f}s)",
        f"{datasets.ORDER_COUNT_REQUEST}\n  exact (counted from the generated data): "
        f"{exact[0]:,} orders, total_cents {exact[1]:,}",
    ]
    for mode in ("auto", "full-chunked"):
        job = by[("JSON", "count", mode)]
        answer = " ".join(_answer_body(job.get("result") or job.get("error") or "").split())
        lines.append(f"  {mode} ({job['mode_used']}): {_clip(answer, 300)}")
    return Panel("\n".join(lines), title="side by side", expand=False)


def _answer_body(text: str) -> str:
    """A result without its ABSTRACT header line."""
    return text.partition("\n\n")[2] or text


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


@dataclass(frozen=True)
class Case:
    """One demo job: which output, which question (its planted fact, or the count), which mode."""

    kind: str
    question: str
    mode: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.question} · {self.mode}"

    @property
    def request(self) -> str:
        return planted(self.kind).request if self.question == "lookup" else datasets.ORDER_COUNT_REQUEST


STAGES = [
    [Case("JSON", "lookup", "auto")],
    [Case("JSON", "count", "auto")],
    [Case("JSON", "lookup", "full-chunked")],
    [
        Case("JSON", "count", "full-chunked"),
        Case("log", "lookup", "read-grep"),
        Case("log", "lookup", "full-chunked"),
    ],
]
"""The demo's jobs: on the JSON, auto (query, where this build has it) beside full-chunked, for the
planted order and for the count; on the log, read-grep beside full-chunked. The auto jobs run first,
one at a time (the second question on an output reuses what the first loaded), then the JSON
lookup's full-chunked alone, so the seconds compared side by side are each the job's own and not a
share of the cores the other map-reduces take."""


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
    var = DATA_DIR / "demo"
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
        jobs: dict[str, Case] = {}
        results: dict[str, Job] = {}
        for stage in STAGES:
            submitted = {client.submit(handles[case.kind], case.request, case.mode)["id"]: case for case in stage}
            results |= follow(client, {job_id: case.label for job_id, case in submitted.items()})
            jobs |= submitted
        ok = report(jobs, results, datasets.order_totals(json_mb * 10**6))
        if embedded:
            served = {jobs[job_id].label: job for job_id, job in results.items()}
            ok &= compare_embedded(env, made, handles, served)
        client.delete_session(session)
    console.rule(
        "[green]demo passed: every lookup found its planted fact (and a query count was exact)"
        if ok
        else "[red]demo failed: a planted fact was not found, a query count was wrong, or the embedded mode differed"
    )
    return 0 if ok else 1
