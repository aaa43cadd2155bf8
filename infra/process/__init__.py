"""What a long-running process (the API, a worker) does to itself: its memory on glibc (`memory`), where that
memory sits on a signal (`snapshots`), and its warm-ups a few seconds after start (`warm_up`)."""
