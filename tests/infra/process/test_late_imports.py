"""After `watch()`, each module imported for the first time is logged once, naming the first-party function whose
call brought it in; modules imported before, and imports already done, are not. In a child process: an audit hook
stays for the life of the process that adds it."""

from __future__ import annotations

import subprocess
import sys

CHILD = """
import logging, sys, types
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s %(message)s")
import json  # before the watch: never logged
from infra.process import late_imports
assert "colorsys" not in sys.modules and "wave" not in sys.modules
print("first watch:", late_imports.watch(), "second:", late_imports.watch())
import json  # already imported: no event
def load_colours():
    import colorsys
    return colorsys
types.FunctionType(load_colours.__code__, vars(late_imports))()  # as if a first-party module's function
import wave  # from the script itself: no first-party function on the stack
import colorsys  # the second time: not logged again
"""


def test_each_module_imported_after_the_watch_is_logged_once_with_its_first_party_caller() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "late import " in line]
    assert "first watch: True second: False" in done.stdout
    assert "toolout.late_imports late import colorsys (from infra.process.late_imports:load_colours)" in lines
    assert "toolout.late_imports late import wave (from ?)" in lines
    assert sum("colorsys" in line for line in lines) == 1
    assert len(lines) == len(set(lines)), "a builtin module's two import events are logged once"
    assert not any(" json" in line for line in lines)
