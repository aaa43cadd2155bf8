"""One-off probes, no targets: their findings are in docs/performance.md (not run by `python -m bench`)."""
