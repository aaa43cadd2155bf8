"""Benchmarks in one process, no service: token counting, grep, the query engine, the slot index walk."""
