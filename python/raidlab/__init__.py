"""raidlab: predict, explain and verify RAID array performance.

The Python front end resolves presets and array TOML files, validates input, builds
scenarios (docs/scenario.md) and runs them through the native simulator
``raidlab._native``.

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
...     print(server.uri)                               # nbd://127.0.0.1:PORT
"""

from raidlab import engine
from raidlab.api import atto, presets, reproduce, run
from raidlab.errors import RaidlabError

__all__ = ["RaidlabError", "atto", "engine", "presets", "reproduce", "run"]
__version__ = "0.1.0"
