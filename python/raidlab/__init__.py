"""raidlab: predict, explain and verify RAID array performance.

The Python front end resolves presets and array TOML files, validates input, builds
scenarios (docs/scenario.md) and runs them through the native simulator
``raidlab._native``. ``raidlab.api`` is the front door every command goes through.

>>> import raidlab
>>> raidlab.presets()                                   # doctest: +SKIP
>>> raidlab.atto(drive="adata-sp900-128g", controller="intel-h97-rst", drives=2,
...              stripe_unit="16K", qd=[1, 4])         # doctest: +SKIP
>>> raidlab.reproduce("ssd-raid0-atto")                 # doctest: +SKIP

``raidlab.engine`` drives real arrays on member files or devices (the
``raidlab-engine`` binary): create, status, serve over NBD, fail, replace with an
online rebuild, check, repair and inject, with reports as dataclasses and DataFrames.

>>> from raidlab import engine
>>> members = ["a.img", "b.img", "c.img", "d.img"]
>>> engine.create(members, level=5, size="64M").state   # doctest: +SKIP
'clean'
>>> with engine.serve(members) as server:               # doctest: +SKIP
...     print(server.uri)                               # nbd+unix:///raidlab?socket=...
"""

from __future__ import annotations

from raidlab.version import __version__ as __version__

# Nothing is imported with the package but its version: the API on first use (`raidlab
# --version` and `raidlab-engine`, a console script over raidlab._native, must not pay
# for pandas, typer or even the error type's imports).
_API_NAMES = ("atto", "presets", "reproduce", "run")
__all__ = ["RaidlabError", "atto", "engine", "presets", "reproduce", "run"]


def __getattr__(name: str) -> object:
    if name in _API_NAMES:
        return getattr(_submodule("api"), name)
    if name in ("engine", "api"):
        return _submodule(name)
    if name == "RaidlabError":
        return _submodule("errors").RaidlabError
    raise AttributeError(f"module 'raidlab' has no attribute {name!r}")


def _submodule(name: str) -> object:
    # __import__, not importlib.import_module: `python -X importtime` shows what it costs
    # (it does not see importlib's imports).
    import sys

    __import__(f"raidlab.{name}")
    return sys.modules[f"raidlab.{name}"]
