"""Benchmarks of the system as processes (offline model, API, workers on `toolout.devstack.stack`): P1-P5, F1, more."""
