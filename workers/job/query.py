"""The query strategy: a sub-agent with SQL (Schema, Query) over the output loaded as tables, plus Read/Grep.

Loading happens here, on the agent queue (the start step only sniffed the first bytes). An output
that does not load is not for this strategy (`LoadFailed`, or any other error opening its tables but an
outage, which the task retries, or the job or output gone): under `auto` the mode is chosen again as for text
(today's rules) and goes on; asked for explicitly, it falls back to truncate like a failed read-grep, the
reason on the job. The tables and each SQL statement run are kept on the job record.
"""

from __future__ import annotations

import logging

from extraction.errors import NotFound, ToolOutError
from extraction.strategies.routing import Mode, RoutingDecision
from extraction.texts.query import query_agent_tools, query_messages, table_name
from infra.errors import BackendUnavailable
from infra.outputs.content import structured_kind
from infra.outputs.storing import forget_loaded_form
from infra.outputs.views import reading_view
from infra.query import EngineLimits, LoadFailed, Opened, open_tables, preload_tables, query_prefix
from infra.query.tools import QueryToolbox
from infra.settings import Settings
from infra.stores.records import OutputRecord
from infra.tracing import traced_step
from workers.job import context, outcomes
from workers.job.context import LiveJob, load
from workers.job.runtime import Runtime
from workers.job.steps import Next
from workers.job.sub_agent import raw_tools, run_sub_agent

log = logging.getLogger("toolout.workers")

MAX_KEPT_SQL_CHARS = 2000


def engine_limits(settings: Settings) -> EngineLimits:
    """Every `query_*` limit of the settings (the SQL size, cell and result bounds, the child's OS limits too)."""
    return EngineLimits.from_settings(settings)


@traced_step("job.query")
def run_query(rt: Runtime, job_id: str) -> Next:
    """Load, then run the sub-agent; returns the next step only when the mode is chosen again as for text."""
    live = load(rt, job_id)
    if live is None:
        return None
    try:
        opened = _open(rt, live)
    except LoadFailed as exc:
        return not_applicable(rt, live, exc.message)
    except (BackendUnavailable, NotFound):
        raise  # an outage is retried by the task; a job or output gone ends it quietly (`quiet_when_over`)
    except Exception as exc:  # whatever else the document made the load trip over is for the fallback, like LoadFailed
        log.warning("job %s: the tables did not open", live.job.id, exc_info=True)
        return not_applicable(rt, live, f"the output's tables did not open ({type(exc).__name__})")
    try:
        _ask(rt, live, opened)
    finally:
        opened.close()
        if opened.keeping is not None:
            _forget_if_deleted(rt, live.output)
    return None


def _open(rt: Runtime, live: LiveJob) -> Opened:
    kind = structured_kind(rt.blobs, live.output)
    if kind is None:
        raise LoadFailed("the output does not look like JSON, NDJSON or CSV")
    opened = open_tables(
        rt.blobs,
        live.output,
        kind,
        engine_limits(rt.settings),
        temp_root=rt.settings.query_temp_dir,
        forms=rt.loaded,
        wait_seconds=rt.settings.query_load_wait_seconds,
    )
    tables = [f"{table_name(t.name)} ({t.rows} rows)" for t in opened.manifest.tables]
    rt.jobs.records.update(
        live.job.id,
        query_tables=tables,
        query_load=opened.how,
        query_load_seconds=round(opened.seconds, 3),
        query_bytes_read=opened.bytes_read,
    )
    log.info("job %s: %s tables in %.2fs (%s)", live.job.id, opened.how, opened.seconds, ", ".join(tables))
    return opened


def kept_sql(sql: str) -> str:
    """The SQL as kept on the job: cut, and a lone surrogate (a model may send `\\ud800`) written as its escape,
    since the job is served as UTF-8 JSON (the API could not serialize the job: every poll of it was a 500)."""
    return sql[:MAX_KEPT_SQL_CHARS].encode("utf-8", "backslashreplace").decode("utf-8")


def _ask(rt: Runtime, live: LiveJob, opened: Opened) -> None:
    job_id = live.job.id
    ran: list[str] = []

    def keep(sql: str) -> None:
        ran.append(kept_sql(sql))
        rt.jobs.records.update(job_id, queries=ran)

    raw = raw_tools(rt, live)
    toolbox = QueryToolbox(opened, raw, rt.settings.query_max_rows, rt.settings.query_max_result_tokens, on_query=keep)
    tables = [(t.name, t.rows) for t in opened.manifest.tables]
    messages = query_messages(live.prompt, handle_filename=live.output.handle, tables=tables, max_rows=toolbox.max_rows)
    run_sub_agent(rt, live, messages, query_agent_tools(), toolbox, Mode.QUERY)


def preload(rt: Runtime, handle: str, tenant: str) -> str:
    """Keep a just-stored output's tables before any question (`infra.query.preload_tables`): what was done.

    Best effort: an output gone, not structured or not loadable is skipped; nothing here fails an upload.
    An output deleted while it loaded loses the tables just kept (its deletion may have run before they were).
    Its session may be deleted before the preload runs, or while: the record or the blob is then gone, or the
    folder the tables were being kept in (a local store's write then fails), which is an agent finishing quickly,
    not a failure ("gone", no traceback); so is a record whose blob is already gone (the deletion is half-way,
    blobs first). The same failure with the output still there is raised.
    """
    try:
        stored = rt.records.outputs.get_output(handle, tenant)
    except NotFound:
        return "gone"
    output = reading_view(stored, redact=tenant not in rt.settings.unredacted_tenants)  # what jobs will ask for
    try:
        done = _load(rt, output)
    except NotFound:
        done = "gone"
    except ToolOutError:
        if _exists(rt, output):
            raise
        done = "gone"
    _forget_if_deleted(rt, output)
    log.info("output %s: preload %s", handle, done)
    return done


def _load(rt: Runtime, output: OutputRecord) -> str:
    kind = structured_kind(rt.blobs, output)
    if kind is None:
        return "not structured"
    try:
        return preload_tables(
            rt.blobs, output, kind, engine_limits(rt.settings), rt.loaded, temp_root=rt.settings.query_temp_dir
        )
    except LoadFailed as exc:
        return f"not loadable ({exc.message})"


def _forget_if_deleted(rt: Runtime, output: OutputRecord) -> None:
    """After tables were kept: if the output was deleted meanwhile, its deletion may have run before they were
    written, so drop them and the pointer to them here (`infra.query.loaded_forms`: whichever runs last does)."""
    if not _exists(rt, output):
        rt.blobs.delete_prefix(query_prefix(output))
        forget_loaded_form(rt.loaded, output)


def _exists(rt: Runtime, output: OutputRecord) -> bool:
    """The output is still there: its record, and its blob when it has one. Every deletion removes the blobs
    first and the records last (`api.lifecycle.purge_session`, `delete_stored_output`), so a record whose blob
    is gone is an output being deleted."""
    try:
        rt.records.outputs.get_output(output.handle, output.tenant)
    except NotFound:
        return False
    return output.inline is not None or rt.blobs.exists(output.blob_key)


def not_applicable(rt: Runtime, live: LiveJob, why: str) -> Next:
    """The output did not load: `auto` chooses again as for text; an explicit `query` falls back to truncate."""
    if Mode.parse(live.job.mode_requested) is not Mode.AUTO:
        outcomes.fall_back_to_truncate(rt, live.job, live.output, f"query failed: {why}")
        return None
    budget = context.chunk_budget_for(rt, live)
    text = context.decide(rt, live, budget, as_text=True)
    decision = RoutingDecision(mode=text.mode, reason=f"auto: not loadable as tables ({why}); {text.reason}")
    return context.follow(rt, live, decision, budget)
