"""The `toolout` command: run the API, a worker, the offline model, or the end-to-end demo."""

from __future__ import annotations

import os
import uuid

import typer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


@app.command()
def api(host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Serve the REST API (OpenAPI docs at /docs)."""
    import uvicorn

    from infra.tokenizer_files import ensure_offline_encodings

    ensure_offline_encodings()
    uvicorn.run("api.app:create_app", factory=True, host=host, port=port, log_level=log_level)


@app.command()
def worker(
    concurrency: int = typer.Option(None, help="threads; default TOOLOUT_WORKER_CONCURRENCY"),
    queues: str = "extract,map,reduce,agent",
    name: str = typer.Option(None, help="node name; default toolout-<random>"),
    log_level: str = "info",
) -> None:
    """Run a Celery worker (thread pool: extraction work waits on LLM I/O, not on the CPU)."""
    from infra.settings import get_settings
    from workers.app import app as celery

    threads = concurrency or get_settings().worker_concurrency
    node = f"{name or 'toolout-' + uuid.uuid4().hex[:8]}@%h"
    celery.worker_main(["worker", "--pool", "threads", "--concurrency", str(threads), "--queues", queues,
                        "--hostname", node, "--loglevel", log_level, "--without-gossip", "--without-mingle"])


@app.command("offline-model")
def offline_model(host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the deterministic offline model (OpenAI-compatible, no LLM inside; knobs: TOOLOUT_OFFLINE_*)."""
    from infra.offline_model.server import serve

    serve(host, port)


@app.command()
def demo(
    size_mb: int = typer.Option(20, help="size of the generated JSON tool output"),
    log_mb: int = typer.Option(50, help="size of the generated service log"),
    workers: int = typer.Option(1, help="worker processes to start"),
) -> None:
    """Start offline model + API + worker(s), extract from generated oversized outputs, print the results."""
    from toolout.demo import run_demo

    raise typer.Exit(run_demo(json_mb=size_mb, log_mb=log_mb, worker_count=workers))


if __name__ == "__main__":
    app()
