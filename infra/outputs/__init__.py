"""Stored outputs: content and its versions, placement under names, storing and reading, session
buffers and variables, JSON streaming, the grep engine."""
