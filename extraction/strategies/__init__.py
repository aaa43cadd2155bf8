"""The extraction strategies as plain steps: mode choice, full-chunked map-reduce, read-grep's agent loop, truncate."""
