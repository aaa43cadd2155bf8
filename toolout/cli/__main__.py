"""`python -m toolout.cli ...` is the `toolout` command (the demo and the tests start processes this way)."""

from toolout.cli import app

app()
