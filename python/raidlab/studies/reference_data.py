"""Where the studies read their reference files (the CSVs of ``data/reference/``).

In order:

1. ``$RAIDLAB_REFERENCE_DIR``, when set: the file of that name in that directory (a
   directory without it is an error naming the variable; nothing falls back);
2. ``data/reference/`` of the source checkout the package runs from (the repository
   root is the directory that holds both ``data/reference`` and ``python/raidlab``,
   found from this file's path), the project's documented place for the files: rows
   added there are seen without copying them into the package;
3. the copy shipped in the package (``raidlab/studies/reference/``), for an installed
   package.

tests/test_reference_data.py checks that the two copies in the repository are
byte-identical.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

ENVIRONMENT = "RAIDLAB_REFERENCE_DIR"


def checkout_data(name: str) -> Path | None:
    """``data/NAME`` of the source checkout this package runs from, or None (an
    installed package, or no such directory)."""
    package = Path(__file__).resolve().parent.parent  # .../python/raidlab
    root = package.parent.parent
    data = root / "data" / name
    if package == root / "python" / "raidlab" and data.is_dir():
        return data
    return None


def checkout_directory() -> Path | None:
    """``data/reference`` of the source checkout this package runs from, or None (an
    installed package)."""
    return checkout_data("reference")


def read_text(name: str) -> str:
    """The reference file ``name`` (e.g. ``hdd_raid0_atto.csv``) as text (module docs)."""
    from raidlab.errors import RaidlabError, read_user_text

    override = os.environ.get(ENVIRONMENT)
    if override:
        path = Path(override) / name
        if not path.is_file():
            raise RaidlabError(
                ENVIRONMENT,
                f"{override!r} has no {name}: give a directory holding the reference "
                "files (a copy of data/reference/), or unset it",
            )
        return read_user_text(path, ENVIRONMENT)
    checkout = checkout_directory()
    if checkout is not None and (checkout / name).is_file():
        return (checkout / name).read_text("utf-8")
    return resources.files("raidlab.studies").joinpath("reference", name).read_text("utf-8")
