"""Opens a process's stores from settings, once, in an entry point (API, worker, embedded mode)."""
