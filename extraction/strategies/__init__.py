"""The extraction strategies as plain steps: routing, full-chunked map-reduce, the read-grep agent loop, truncate."""
