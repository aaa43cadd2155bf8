"""The client commands: store, extract, jobs, vars, read, grep — for people at a terminal and for scripts.

They talk to a running API through the SDK (`toolout.client`), so they work on the light install.
`--json` prints the API's JSON instead of text. Exit codes scripts can rely on:

| code | meaning |
|---|---|
| 0 | done (an extraction that found nothing is still 0: its ABSTRACT says what was searched) |
| 1 | the extraction ended `failed` or `canceled` |
| 2 | bad usage (unknown option, missing argument) |
| 3 | the API refused the request (4xx: unknown handle or session, invalid input, bad key) |
| 4 | the API or a backend is unavailable (connection refused, 5xx) |
| 5 | `--wait` ran out before the job ended (the job goes on; `toolout jobs <id>` follows it) |
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolout.client import TERMINAL, ToolOutAPIError, ToolOutClient, TransportError, UnavailableError

client_app = typer.Typer()
"""Its commands are merged into the top-level `toolout` app (`toolout.cli`)."""

OK, JOB_FAILED, USAGE, REFUSED, UNAVAILABLE, TIMED_OUT = 0, 1, 2, 3, 4, 5
T = TypeVar("T")

ApiUrl = Annotated[str, typer.Option("--api-url", envvar="TOOLOUT_API_URL", help="the toolout API")]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="TOOLOUT_API_KEY", help="Bearer API key")]
AsJson = Annotated[bool, typer.Option("--json", help="print the API's JSON (for scripts)")]
DEFAULT_URL = "http://127.0.0.1:8000"

err = Console(stderr=True)


@contextmanager
def connected(api_url: str, api_key: str | None) -> Iterator[ToolOutClient]:
    """The SDK client; API errors and connection failures become a message and the documented exit code."""
    try:
        with ToolOutClient(api_url, api_key=api_key) as client:
            yield client
    except ToolOutAPIError as exc:
        if isinstance(exc, TransportError):
            err.print(f"error: cannot reach the toolout API at {api_url}: {exc.message}", markup=False)
        else:
            err.print(f"error: {exc.status} {exc.code}: {exc.message}", markup=False)
        raise typer.Exit(UNAVAILABLE if isinstance(exc, UnavailableError) else REFUSED) from None


def emit(as_json: bool, data: Any, text: Callable[[Any], str]) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False) if as_json else text(data))


# --- store ------------------------------------------------------------------------------------
@client_app.command()
def store(
    file: Annotated[str, typer.Argument(help="the tool output to store; - reads standard input")],
    session: Annotated[
        str | None, typer.Option(envvar="TOOLOUT_SESSION", help="the session to store into; default: a new one")
    ] = None,
    tool_name: Annotated[str, typer.Option(help="the tool that produced the output")] = "unknown",
    tool_args: Annotated[str, typer.Option(help="the tool's arguments, verbatim JSON")] = "{}",
    content_type: Annotated[str, typer.Option(help="the output's media type")] = "text/plain",
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Store a tool output (streamed) and print its handle and, when it is oversized, the message for the model."""
    with connected(api_url, api_key) as client:
        session_id = session or client.create_session()
        meta = client.store(
            session_id, _blocks(file), tool_name=tool_name, tool_args=tool_args, content_type=content_type
        )
    emit(as_json, {"session_id": session_id, **meta}, _stored_text)


def _blocks(file: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The file (or stdin) in blocks, so a 1 GB output is never held whole."""
    stream = sys.stdin.buffer if file == "-" else Path(file).open("rb")  # noqa: SIM115 - closed when exhausted
    with stream:
        while block := stream.read(size):
            yield block


def _stored_text(meta: dict[str, Any]) -> str:
    lines = [
        f"session  {meta['session_id']}",
        f"handle   {meta['handle']}",
        f"size     {meta['bytes']:,} bytes, {meta['lines']:,} lines, {meta['tokens']:,} tokens",
    ]
    return "\n".join([*lines, "", meta["message"]] if meta.get("message") else lines)


# --- extract ----------------------------------------------------------------------------------
@client_app.command()
def extract(
    handle: Annotated[str, typer.Argument(help="the handle from `toolout store` (or the too-large message)")],
    request: Annotated[str, typer.Argument(help="what to extract: precise and detailed")],
    mode: Annotated[str, typer.Option(help="auto | full-chunked | read-grep | truncate | query")] = "auto",
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="follow the job to its end")] = True,
    timeout: Annotated[float, typer.Option(help="seconds to follow the job")] = 600.0,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="answer from an identical earlier job")] = True,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """Run the `tool_output` extraction; with --wait (the default) show its progress and print its answer."""
    with connected(api_url, api_key) as client:
        job = client.submit(handle, request, mode, cache=cache)
        if not wait:
            emit(as_json, job, lambda j: j["id"])
            return
        job = _follow(client, job, timeout, show=not as_json and err.is_terminal)
    emit(as_json, job, lambda j: j.get("result") or j.get("error") or "")
    raise typer.Exit(_job_exit(job))


def _follow(client: ToolOutClient, job: dict[str, Any], timeout: float, *, show: bool) -> dict[str, Any]:
    """Poll until the job ends or `timeout` passes; a live bar on a terminal (chunks, calls, tokens, elapsed)."""
    if not show:
        return client.wait(job["id"], timeout=timeout)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[state]}"))
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as progress:
        bar = progress.add_task("extracting", total=None, state="queued")
        return client.wait(job["id"], timeout=timeout, on_progress=lambda j: progress.update(bar, **progress_fields(j)))


def progress_fields(job: dict[str, Any]) -> dict[str, Any]:
    """What the bar shows for one poll of the job."""
    usage = job["usage"]
    tokens = f"{usage['input_tokens']:,} in / {usage['output_tokens']:,} out"
    state = f"{job['status']} · {job['mode_used'] or 'routing'} · {usage['calls']} LLM calls · {tokens}"
    if job["mode_used"] in ("read-grep", "query"):
        return {"total": None, "completed": job["agent_turns"], "state": state}
    return {"total": job["chunks_total"] or None, "completed": job["chunks_done"], "state": state}


def _job_exit(job: dict[str, Any]) -> int:
    if job["status"] not in TERMINAL:
        err.print(f"still {job['status']}: follow it with `toolout jobs {job['id']}`", markup=False)
        return TIMED_OUT
    return OK if job["status"] == "succeeded" else JOB_FAILED


# --- jobs -------------------------------------------------------------------------------------
@client_app.command()
def jobs(
    target: Annotated[str, typer.Argument(help="a job id, or a session id for all of its jobs")],
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
    trace: Annotated[bool, typer.Option("--trace", help="each step of the job: what it read and said")] = False,
) -> None:
    """Show one extraction job, or every job of a session."""
    with connected(api_url, api_key) as client:
        found = _job_or_session(client, target)
        traced = client.trace(target) if trace and isinstance(found, dict) else None
    if traced is not None:
        emit(as_json, traced, _trace_text)
        return
    if isinstance(found, dict):
        emit(as_json, found, lambda j: j.get("result") or f"{j['status']} ({j['mode_used'] or 'routing'})")
        return
    if as_json:
        emit(True, found, str)
        return
    Console().print(_jobs_table(found))


def _trace_text(trace: dict[str, Any]) -> str:
    """One line per step: where it read, what it cost, the first line of what it said."""
    return "\n".join(_step_line(event) for event in trace["events"]) or f"no steps traced ({trace['status']})"


def _step_line(event: dict[str, Any]) -> str:
    said = (event.get("answer") or event.get("result") or event.get("reason") or event.get("error") or "").strip()
    cost = f" · {event['input_tokens']} in/{event['output_tokens']} out" if "input_tokens" in event else ""
    return f"{event['seq']:>4} {_step_where(event)}{cost} · {said.splitlines()[0][:100] if said else '-'}"


def _step_where(event: dict[str, Any]) -> str:
    if event["kind"] == "map":
        return f"chunk {event['chunk'] + 1} bytes {event['start']}-{event['end']}"
    if event["kind"] == "reduce":
        return f"reduce level {event['level']} group {event['group'] + 1} ({event['inputs']} inputs)"
    if event["kind"] == "tool":
        return f"{event['name']} {json.dumps(event['args'])}"
    return str(event["kind"])


def _job_or_session(client: ToolOutClient, target: str) -> dict[str, Any] | list[dict[str, Any]]:
    try:
        return client.job(target)
    except ToolOutAPIError as exc:
        if exc.status != 404:
            raise
    return client.session_jobs(target)


def _jobs_table(found: list[dict[str, Any]]) -> Table:
    table = Table("job", "status", "strategy", "chunks", "LLM calls", "seconds", "extract")
    for job in found:
        seconds = (job["finished_at"] or time.time()) - job["created_at"]
        chunks = f"{job['chunks_done']}/{job['chunks_total']}"
        row = (job["id"], job["status"], job["mode_used"] or "-", chunks, str(job["usage"]["calls"]))
        table.add_row(*row, f"{seconds:.1f}", job["extract"][:60])
    return table


# --- vars -------------------------------------------------------------------------------------
@client_app.command("vars")
def vars_(
    session: Annotated[str, typer.Argument(envvar="TOOLOUT_SESSION", help="the session whose variables to list")],
    name: Annotated[str | None, typer.Argument(help="one variable to show")] = None,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
    as_json: AsJson = False,
) -> None:
    """The session's variables (name, tool, size, preview), or one of them; `$name` passes it by reference."""
    with connected(api_url, api_key) as client:
        found: Any = client.variable(session, name) if name else client.variables(session)
    if as_json or isinstance(found, dict):
        emit(True, found, str)
        return
    table = Table("variable", "tool", "bytes", "tokens", "preview")
    for item in found:
        table.add_row(f"${item['name']}", item["tool"], f"{item['bytes']:,}", f"{item['tokens']:,}", item["preview"])
    Console().print(table)


# --- read / grep ------------------------------------------------------------------------------
@client_app.command()
def read(
    handle: str,
    offset: Annotated[int, typer.Option(help="first line (1-based)")] = 1,
    limit: Annotated[int, typer.Option(help="how many lines")] = 200,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Numbered lines of a stored output, like the read-grep sub-agent's Read."""
    with connected(api_url, api_key) as client:
        typer.echo(client.read(handle, offset=offset, limit=limit))


@client_app.command()
def grep(
    handle: str,
    pattern: str,
    regex: Annotated[bool, typer.Option(help="RE2 regular expression instead of a literal")] = False,
    ignore_case: Annotated[bool, typer.Option("--ignore-case", "-i")] = False,
    before: Annotated[int, typer.Option("--before", "-B", help="lines of context before")] = 0,
    after: Annotated[int, typer.Option("--after", "-A", help="lines of context after")] = 0,
    max_matches: Annotated[int, typer.Option(help="stop after this many matching lines")] = 100,
    api_url: ApiUrl = DEFAULT_URL,
    api_key: ApiKey = None,
) -> None:
    """Matching lines of a stored output with line numbers, like `grep -n` (and the sub-agent's Grep)."""
    with connected(api_url, api_key) as client:
        options = {"regex": regex, "ignore_case": ignore_case, "before": before, "after": after}
        typer.echo(client.grep(handle, pattern, **options, max_matches=max_matches))
