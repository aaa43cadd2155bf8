"""Fan-in: map and reduce parts settled once, and each level's next step handed out once per attempt
(`fanin.redis`, and its in-memory twin `fanin.memory`)."""

from infra.stores.jobs.fanin.base import JobFanIn

__all__ = ["JobFanIn"]
