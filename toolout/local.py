"""Extraction in this process, without a server: the service's pipeline on in-memory stores and a thread pool.

For library users who want `tool_output` semantics (map-reduce over token-balanced chunks, the
read-grep sub-agent, the truncate fallback, the nonce-tagged final report) but no Redis, Celery or
API. Every step is the service's own (`workers.job.pipeline`, `workers.job.outcomes`), run by
`workers.local.LocalDispatcher`; only the executor differs, so the result text and the job record
are what the service would produce for the same output, model and settings.

    from toolout.local import extract

    result = extract(big_json_bytes, "every order with status 'declined'", model="openai/gpt-4o-mini")
    print(result.text)           # ABSTRACT FROM TOOL OUTPUT ... STRATEGY:full-chunked: ...
    print(result.job.usage)      # calls, tokens, cost

Needs the server extra (litellm); the model is any litellm model string.

`serve(...)` is the same embedded service behind the real API, on a loopback port of this process: give its
URL to a `Toolkit` or a framework integration (`toolout.integrations`) and nothing else needs to run.

    with serve("openai/gpt-4o-mini") as url:
        agent = create_agent(model, tools, middleware=[ToolOutMiddleware(api_url=url)])
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from extraction.documents.lines import build_line_index
from extraction.documents.stats import DocumentStats, measure
from extraction.documents.structured import SNIFF_BYTES
from extraction.protocols import LLM
from extraction.strategies.mapreduce import ModelLimits
from extraction.texts.oversize import is_oversized, too_large_message
from extraction.tokenizer_files import ensure_offline_encodings
from infra.outputs.storing import UploadMeta, store_output
from infra.outputs.views import message_stats
from infra.query.loaded_forms import wants_preload
from infra.settings import Settings
from infra.stores.bundle import Stores
from infra.stores.jobs import JobRecord, new_job
from infra.stores.records import OutputRecord
from infra.wiring.stores import MEMORY_URL, open_stores
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher

BLOCK_BYTES = 1 << 20

__all__ = ["LocalToolOut", "Result", "Stored", "extract", "local_settings", "serve"]
"""The public API, as the Python reference renders it (`tests/test_python_reference.py`)."""


@dataclass(frozen=True)
class Stored:
    """One stored output: its handle, its stats, and (when oversized) the text the model sees instead."""

    handle: str
    stats: DocumentStats
    oversized: bool
    message: str | None


@dataclass(frozen=True)
class Result:
    """What `tool_output` answers (`text`) and the job record behind it (strategy, chunks, usage)."""

    text: str
    job: JobRecord


class LocalToolOut:
    """One embedded session: store outputs, extract from them; close it (or use `with`) when done."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        llm: LLM | None = None,
        limits: ModelLimits | None = None,
        **settings: Any,
    ) -> None:
        """`model`/`api_base`/`api_key` as litellm takes them (None: the provider's default); `llm` replaces
        the litellm client entirely (tests); other keyword arguments are `Settings` fields."""
        ensure_offline_encodings()
        self.settings = local_settings(model, api_base, api_key, **settings)
        self.stores: Stores = open_stores(self.settings)
        self.runtime = build_runtime(self.settings, self.stores, llm, limits=limits)
        self.dispatcher = LocalDispatcher(self.runtime)
        self.stores.jobs.records.listen_finished(self.dispatcher.finished)
        self.session = self.stores.records.sessions.create_session()

    def store(
        self,
        content: bytes | str,
        *,
        tool_name: str = "unknown",
        tool_args: str = "{}",
        content_type: str = "text/plain",
    ) -> Stored:
        """Measure and keep one tool output, as the service's upload does."""
        data = content.encode("utf-8") if isinstance(content, str) else content
        blocks = [data[i : i + BLOCK_BYTES] for i in range(0, len(data), BLOCK_BYTES)] or [b""]
        measured = measure(blocks, self.settings.tokenizer_encoding)
        lines = build_line_index(blocks)
        blobs = self.stores.blobs

        def write(key: str) -> None:
            blobs.put_bytes(key, data)

        meta = UploadMeta(tool_name, tool_args, content_type)
        record = store_output(blobs, self.stores.records, self.session, meta, measured, lines, write)
        stored = self._stored(record)
        if wants_preload(self.settings, record, data[:SNIFF_BYTES], oversized=stored.oversized):
            self.dispatcher.preload(record.handle, record.tenant)  # the first extract finds the tables kept
        return stored

    def _stored(self, record: OutputRecord) -> Stored:
        """Oversized by what was stored; the message gives what a job will read (an HTML page's text view)."""
        s, stats, handle = self.settings, record.stats, record.handle
        oversized = is_oversized(stats, max_bytes=s.tool_response_max_bytes, budget_tokens=s.context_budget_tokens)
        message = too_large_message(message_stats(record), handle) if oversized else None
        return Stored(handle, stats, oversized, message)

    def extract(self, handle: str, extract: str, mode: str = "auto") -> Result:
        """The `tool_output(handle, extract, mode)` call, run to its end in this thread."""
        output = self.stores.records.outputs.get_output(handle, self.session.tenant)
        job = self.stores.jobs.records.create(new_job(output, extract, mode))
        self.dispatcher.run(job.id)
        finished = self.stores.jobs.records.get(job.id)
        return Result(finished.result or "", finished)

    def close(self) -> None:
        """Stop the thread pool and drop the in-memory stores (and with them every stored output)."""
        self.dispatcher.close()
        self.stores.close()

    def __enter__(self) -> LocalToolOut:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def local_settings(model: str | None, api_base: str | None, api_key: str | None, **overrides: Any) -> Settings:
    """Settings for one process: in-memory stores and blobs; a given model brings its own endpoint and key."""
    chosen: dict[str, Any] = {"model": model, "model_api_base": api_base, "model_api_key": api_key} if model else {}
    return Settings(**{"redis_url": MEMORY_URL, "blob_store": MEMORY_URL, **chosen, **overrides})


def extract(
    content: bytes | str,
    extract: str,
    mode: str = "auto",
    *,
    model: str | None = None,
    tool_name: str = "unknown",
    tool_args: str = "{}",
    **options: Any,
) -> Result:
    """Store `content` and run one extraction on it; `options` as for `LocalToolOut`."""
    with LocalToolOut(model, **options) as local:
        stored = local.store(content, tool_name=tool_name, tool_args=tool_args)
        return local.extract(stored.handle, extract, mode)


@contextmanager
def serve(
    model: str | None = None,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    port: int = 0,
    **settings: Any,
) -> Iterator[str]:
    """The API on in-memory stores and a local thread pool (no Redis, Celery or blob store), under uvicorn in a
    thread on loopback `port` (0: a free one), without authentication (only this machine reaches it) unless
    `auth_mode="keys"` is given; yields its URL. Arguments as for `LocalToolOut`."""
    import uvicorn

    from api.app import create_app
    from api.deps import Services

    chosen = local_settings(model, api_base, api_key, **{"auth_mode": "dev", **settings})
    stores = open_stores(chosen)
    dispatcher = LocalDispatcher(build_runtime(chosen, stores, None))
    app = create_app(services=Services(settings=chosen, stores=stores, dispatcher=dispatcher))
    keep_alive = chosen.api_keep_alive_seconds  # see the setting: never close an idle connection before a client would
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", timeout_keep_alive=keep_alive
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="toolout-local-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{_bound_port(server)}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        dispatcher.close()
        stores.close()


def _bound_port(server: Any, timeout: float = 10.0) -> int:
    """The port uvicorn bound (port 0 asks the OS for a free one), once it has started."""
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the embedded toolout API did not start within {timeout:.0f} s")
        time.sleep(0.02)
    return int(server.servers[0].sockets[0].getsockname()[1])
