"""One fuzz target under atheris (libFuzzer in this process): `python -m tests.fuzz.run TARGET [libFuzzer flags]`.

The project's own modules are instrumented for coverage as they are imported; the libraries they call
(pydantic, DuckDB, RE2, the HTML converter) are imported first, uninstrumented, so feedback measures our
branches. libFuzzer's flags pass through: `-max_total_time=S` bounds the run, `-timeout=S` bounds one
input (a hang is a finding), and the directories given are the corpus (new inputs go to the first).
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["extraction", "infra"]):
    from tests.fuzz.targets import TARGETS


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(
            f"usage: python -m tests.fuzz.run TARGET [libFuzzer flags] [corpus dirs]; targets: {', '.join(TARGETS)}"
        )
    target = TARGETS[argv[1]]
    atheris.Setup([argv[0], *argv[2:]], target.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
