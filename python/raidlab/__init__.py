"""raidlab: predict, explain and verify RAID array performance.

The Python front end resolves presets and array TOML files, validates input, builds
scenarios (docs/scenario.md) and runs them through the native simulator
``raidlab._native``.

>>> import raidlab
>>> raidlab.presets()                                   # doctest: +SKIP
>>> raidlab.atto(drive="adata-sp900-128g", controller="intel-h97-rst", drives=2,
...              stripe_unit="16K", qd=[1, 4])         # doctest: +SKIP
>>> raidlab.reproduce("ssd-raid0-atto")                 # doctest: +SKIP
"""

from raidlab.api import atto, presets, reproduce, run
from raidlab.errors import RaidlabError

__all__ = ["RaidlabError", "atto", "presets", "reproduce", "run"]
__version__ = "0.1.0"
