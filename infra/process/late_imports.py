"""Imports a long-running process makes after its warm-up, each logged once: what the warm-up should import instead.

A late import costs twice. Its seconds fall on the request or task that triggers it; and its identifiers join
CPython's table of interned strings, which doubles when its count passes a power of two, so one late import can
step a process's RSS up hours into its life; a soak shows it as a step in both workers (`docs/operations.md`).

`watch()` adds an audit hook (`sys.addaudithook`: the `import` event fires only for a module not yet in
`sys.modules`, so an import already done costs nothing here) and logs `late import <module> (from <where>)` at INFO,
naming the first-party function whose call brought it in. The soak counts these lines per process and prints
them (`bench.soak.run`), so a new lazy import on a worker's path shows up as a line, not as an RSS step.
An audit hook cannot be removed: `watch` installs one per process, however often it is called.
"""

from __future__ import annotations

import logging
import sys
import threading
from types import FrameType

log = logging.getLogger("toolout.late_imports")

FIRST_PARTY = ("extraction.", "infra.", "workers.", "api.", "toolout.")
PREFIX = "late import "
"""The log line's start, which `bench.soak.run` counts."""

_state = threading.local()
_installed = threading.Event()
_logged: set[object] = set()
"""Modules logged already: a builtin module raises its `import` event twice."""


def watch() -> bool:
    """From now on, log each module imported for the first time; False when a hook was installed already."""
    if _installed.is_set():
        return False
    _installed.set()
    sys.addaudithook(_on_audit)
    log.info("watching for imports after the warm-up")
    return True


def _on_audit(event: str, args: tuple[object, ...]) -> None:
    if event != "import" or args[0] in _logged or getattr(_state, "busy", False):
        return
    _logged.add(args[0])
    _state.busy = True  # logging a line must not log the imports the logging itself makes
    try:
        log.info("%s%s (from %s)", PREFIX, args[0], where(sys._getframe(1)))
    finally:
        _state.busy = False


def where(frame: FrameType | None) -> str:
    """The innermost first-party function on the stack, as `module:function` (`?` when none: a library's thread)."""
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith(FIRST_PARTY):
            return f"{module}:{frame.f_code.co_qualname}"
        frame = frame.f_back
    return "?"
