"""The server-side commands: run the API, a worker, Flower, the offline model, the demo; manage API keys; move
Redis keys to the cluster-ready layout (`migrate-keys`).

Each imports what it runs only when it runs, and on the light install (no `server` extra) says
what to install instead of failing with a traceback.
"""

from __future__ import annotations

import functools
import importlib.util
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from infra.settings import Settings
    from infra.stores.apikeys import ApiKeyStore

T = TypeVar("T")


server_app = typer.Typer()
"""Its commands are merged into the top-level `toolout` app (`toolout.cli`)."""

SERVER_PACKAGES = (
    "fastapi",
    "uvicorn",
    "celery",
    "redis",
    "boto3",
    "litellm",
    "pydantic_settings",
    "api",
    "workers",
    "infra",
    "toolout.devstack",  # the server distribution's own packages
)


def needs_server(command: Callable[..., T]) -> Callable[..., T]:
    """A command that runs part of the server: on the light install it says what to install instead of a traceback."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> T:
        missing = [name for name in SERVER_PACKAGES if importlib.util.find_spec(name) is None]
        if missing:
            typer.echo(
                f"`toolout {command.__name__.replace('_', '-')}` runs the server, which is not installed here "
                f"(missing: {', '.join(missing)}): pip install 'toolout[server]' "
                "(from a clone: pip install -e '.[server]')",
                err=True,
            )
            raise typer.Exit(2)
        return command(*args, **kwargs)

    return checked


def say_where_things_go(command: str, settings: Settings) -> None:
    """At start, on stderr: where model calls go and where blobs are kept, the two defaults a user must know."""
    from infra.llm.provider import model_calls_line

    typer.echo(f"toolout {command}: {model_calls_line(settings)}", err=True)
    typer.echo(f"toolout {command}: blobs: {settings.blob_store}", err=True)


@server_app.command()
@needs_server
def api(
    host: str = typer.Option(None, help="the address to listen on; default TOOLOUT_API_HOST (127.0.0.1)"),
    port: int = typer.Option(None, help="the port; default TOOLOUT_API_PORT (8000)"),
    log_level: str = "info",
) -> None:
    """Serve the REST API (OpenAPI docs at /docs)."""
    import uvicorn

    from extraction.tokenizer_files import ensure_offline_encodings
    from infra.logs import configure_logging
    from infra.process.memory import settle
    from infra.process.snapshots import install as install_snapshots
    from infra.settings import get_settings

    settings = get_settings()
    settle(settings.malloc_arena_max, settings.malloc_trim_interval_seconds, settings.malloc_mmap_threshold_bytes)
    install_snapshots(settings.memory_snapshot_dir)
    ensure_offline_encodings()
    json_logs = configure_logging(settings)  # uvicorn's loggers then propagate to the JSON root handler
    say_where_things_go("api", settings)
    log_config = None if json_logs else uvicorn.config.LOGGING_CONFIG
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host or settings.api_host,
        port=port or settings.api_port,
        log_level=log_level,
        log_config=log_config,
        timeout_keep_alive=settings.api_keep_alive_seconds,
    )


@server_app.command()
@needs_server
def worker(
    concurrency: int = typer.Option(None, help="threads; default TOOLOUT_WORKER_CONCURRENCY"),
    queues: str = "extract,map,reduce,agent,webhooks",
    name: str = typer.Option(None, help="node name; default toolout-<random>"),
    log_level: str = typer.Option("info", help="Celery's per-task lines (received, succeeded) only at debug"),
) -> None:
    """Run a Celery worker (thread pool: extraction work waits on LLM I/O, not on the CPU)."""
    from infra.process.memory import settle
    from infra.process.snapshots import install as install_snapshots
    from infra.settings import get_settings
    from workers.celery.main import run_worker

    settings = get_settings()
    settle(settings.malloc_arena_max, settings.malloc_trim_interval_seconds, settings.malloc_mmap_threshold_bytes)
    install_snapshots(settings.memory_snapshot_dir)
    say_where_things_go("worker", settings)
    threads = concurrency or settings.worker_concurrency
    node = f"{name or 'toolout-' + uuid.uuid4().hex[:8]}@%h"
    run_worker(
        settings,
        [
            "--pool",
            "threads",
            "--concurrency",
            str(threads),
            "--queues",
            queues,
            "--hostname",
            node,
            "--loglevel",
            log_level,
            "--without-gossip",
            "--without-mingle",
        ],
        task_logs=log_level.lower() == "debug",
    )


@server_app.command()
@needs_server
def flower(port: int = 5555, address: str = "127.0.0.1") -> None:
    """Serve Flower (Celery's monitor) for the workers on TOOLOUT_BROKER_URL; needs the `compose` extra."""
    from infra.settings import get_settings
    from workers.celery.app import create_celery

    create_celery(get_settings()).start(["flower", f"--port={port}", f"--address={address}"])


@server_app.command("offline-model")
@needs_server
def offline_model(
    host: str = "127.0.0.1",
    port: int = 8765,
    rpm: int | None = typer.Option(None, help="requests per minute it allows; past them it answers 429 (0 = none)"),
    tpm: int | None = typer.Option(None, help="tokens per minute (prompt + max_tokens) it allows (0 = none)"),
    tail_fraction: float | None = typer.Option(None, help="share of calls that are slow, drawn per call (0-1)"),
    tail_multiplier: float | None = typer.Option(None, help="a slow call's latency, in base latencies (>= 1)"),
) -> None:
    """Serve the deterministic offline model (OpenAI-compatible, no LLM inside; knobs: TOOLOUT_OFFLINE_*)."""
    from offline_model.config import OfflineModelConfig
    from offline_model.server import serve

    given = {"rpm": rpm, "tpm": tpm, "tail_fraction": tail_fraction, "tail_multiplier": tail_multiplier}
    values = {name: str(value) for name, value in given.items() if value is not None}
    serve(host, port, OfflineModelConfig.from_env().with_values(values))


@server_app.command()
@needs_server
def demo(
    size_mb: int = typer.Option(20, help="size of the generated JSON tool output"),
    log_mb: int = typer.Option(50, help="size of the generated service log"),
    workers: int = typer.Option(1, help="worker processes to start"),
    embedded: bool = typer.Option(False, help="also run each job with toolout.local and check it answers the same"),
) -> None:
    """Start offline model + API + worker(s), extract from generated oversized outputs, print the results."""
    from toolout.devstack.demo import run_demo

    raise typer.Exit(run_demo(json_mb=size_mb, log_mb=log_mb, worker_count=workers, embedded=embedded))


# --- API keys ---------------------------------------------------------------------------------
keys_app = typer.Typer(
    no_args_is_help=True, help="Manage API keys in Redis (TOOLOUT_REDIS_URL); only sha256 hashes are stored."
)


def _key_store() -> ApiKeyStore:
    """The key store on the Redis the API uses, with the keys configured in TOOLOUT_API_KEYS."""
    from infra.settings import Settings
    from infra.wiring.stores import open_stores

    return open_stores(Settings()).api_keys


def _or_exit(action: Callable[[], T]) -> T:
    """Run a key-store action; our errors (bad tenant, unknown prefix, Redis down) become a message and exit 1."""
    from extraction.errors import ToolOutError

    try:
        return action()
    except ToolOutError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        raise typer.Exit(1) from None


@keys_app.command("create")
@needs_server
def keys_create(tenant: str = typer.Option(..., help="the tenant the key acts for (letters, digits, . _ -)")) -> None:
    """Create a key and print it on stdout, once: it is not stored anywhere, only its hash is."""
    key, info = _or_exit(lambda: _key_store().create(tenant))
    typer.echo(key)
    typer.echo(f"created a key for tenant {info.tenant!r}, hash {info.key_hash}; it is shown only this once", err=True)


@keys_app.command("list")
@needs_server
def keys_list() -> None:
    """Every key: hash, tenant, where it comes from (settings or redis) and when it was created."""
    import datetime

    for info in _or_exit(lambda: _key_store().list()):
        created = (
            datetime.datetime.fromtimestamp(info.created_at).isoformat(timespec="seconds") if info.created_at else "-"
        )
        typer.echo(f"{info.key_hash}  {info.tenant:<24}  {info.source:<8}  {created}")


@keys_app.command("revoke")
@needs_server
def keys_revoke(
    hash_prefix: str = typer.Argument(
        ..., help="at least 8 hex characters of the key's hash (from `toolout keys list`)"
    ),
) -> None:
    """Delete a key stored in Redis; requests with it are refused (401) from now on."""
    info = _or_exit(lambda: _key_store().revoke(hash_prefix))
    typer.echo(f"revoked {info.key_hash} (tenant {info.tenant!r})")


# --- Redis key layout ---------------------------------------------------------------------------
@server_app.command("migrate-keys")
@needs_server
def migrate_keys(
    dry_run: bool = typer.Option(False, "--dry-run", help="count what would move, change nothing"),
) -> None:
    """Move sessions, outputs and idempotency keys written by a release before the Redis Cluster layout to their
    new names (TOOLOUT_REDIS_URL, a standalone Redis); running it again is a no-op."""
    from extraction.errors import InvalidInput
    from infra.redis.client import connect
    from infra.settings import Settings
    from infra.stores.key_migration import migrate

    settings = Settings()

    def run() -> str:
        if settings.redis_cluster:
            raise InvalidInput("migrate-keys runs on the standalone Redis the old release used, not on a cluster")
        client = connect(settings.redis_url, sentinels=settings.sentinels, master=settings.redis_sentinel_master)
        try:
            return migrate(client, dry_run=dry_run).summary(dry_run)
        finally:
            client.close()

    typer.echo(_or_exit(run))
