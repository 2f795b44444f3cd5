"""The ``raidlab-engine`` console script of the wheel: the real-data engine's command
line, compiled into ``raidlab._native`` (see crates/raidlab-py/src/engine.rs).

A development checkout (``make setup``) puts the standalone binary in the venv's
``bin`` instead: it starts faster than an interpreter, which the tests' hundreds of
engine calls notice.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run the engine with this process's arguments and exit with its code."""
    from raidlab._native import engine_main

    sys.stdout.flush()
    sys.exit(engine_main(sys.argv))


if __name__ == "__main__":
    main()
