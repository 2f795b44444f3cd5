"""The SSD cache tier in front of an array: the ``[cache]`` table of an array TOML file
and the ``--cache-*`` flags -> the scenario's ``array.cache`` (docs/cache-tier.md).

Array TOML file::

    [cache]
    policy = "raidix"                      # raidix (default), lru, smq, bcache
    drive = "hgst-ultrastar-ssd400m-200g"  # the cache's SSD preset (required)
    drives = 4                             # default 4
    level = 10                             # default 10 (any raidlab level)
    size = "372G"                          # cache bytes used (default: the SSD array's capacity)
    controller = "hba"                     # the SSD array's controller (default hba)
    region = "1G"                          # raidix log region (default size / 16, at most 1G)
    rrc_share = 50                         # raidix share of regions for reads, percent
    admit_touches = 3                      # raidix: random read admitted on this touch
    rwc_write_max = "32K"                  # raidix: random writes shorter than this cached
    line = "4K"                            # cache line
    ghost_entries = 1048576                # ghost / hotspot queue length
    sequential_cutoff = "4M"               # bcache's sequential cutoff

Every bound is the native side's (``raidlab_cache::CacheConfig::validate`` and the
array rules); this module parses and names the user's key when the native side refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits, native
from raidlab.scenario.array import ArrayRequest, build_array, parse_int
from raidlab.scenario.presets import DEFAULT_CONTROLLER
from raidlab.units import parse_size

POLICIES = ("raidix", "lru", "smq", "bcache")
ARRAY_KEYS = ("drive", "drives", "level", "controller", "stripe_unit")
# Canonical key -> (scenario key under array.cache, parser kind).
PARAMETERS: dict[str, tuple[str, str]] = {
    "size": ("capacity_bytes", "size"),
    "line": ("line_bytes", "size"),
    "region": ("region_bytes", "size"),
    "rrc_share": ("rrc_share_pct", "int"),
    "admit_touches": ("rrc_admit_touches", "int"),
    "rwc_write_max": ("rwc_write_max_bytes", "size"),
    "ghost_entries": ("ghost_entries_max", "int"),
    "sequential_cutoff": ("sequential_cutoff_bytes", "size"),
}
CACHE_KEYS = ("policy", *ARRAY_KEYS, *PARAMETERS)
# Bounds of the integer parameters before the native side sees them (JSON integers).
INT_MAX = 2**32 - 1


def _label(labels: Mapping[str, str], key: str) -> str:
    return labels.get(key, f"cache.{key}")


def _parameter(value: Any, kind: str, label: str) -> int:
    if kind == "size":
        return parse_size(str(value) if not isinstance(value, int) else value, label)
    text = str(value).rstrip("%") if isinstance(value, str) else value
    return parse_int(text, label, 0, INT_MAX)


def build_cache(values: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """The scenario's ``array.cache`` from ``values`` (canonical keys of CACHE_KEYS, None
    for not given); ``labels`` names keys in errors (a flag, ``file.toml: cache.key``)."""
    given = {key: value for key, value in values.items() if value is not None}
    for key in given:
        if key not in CACHE_KEYS:
            raise RaidlabError(
                _label(labels, key), f"unknown key '{key}'; allowed: {', '.join(CACHE_KEYS)}"
            )
    policy = given.get("policy", "raidix")
    if policy not in POLICIES:
        raise RaidlabError(
            _label(labels, "policy"), f"must be one of {', '.join(POLICIES)}, got {policy!r}"
        )
    if "drive" not in given:
        raise RaidlabError(
            _label(labels, "drive"),
            "the cache needs its SSD drive preset, e.g. hgst-ultrastar-ssd400m-200g "
            "(see `raidlab presets`)",
        )
    request = ArrayRequest(
        level=given.get("level", 10),
        drives=given.get("drives", 4),
        stripe_unit=given.get("stripe_unit", "64K"),
        drive=given["drive"],
        controller=given.get("controller", DEFAULT_CONTROLLER),
        labels={key: _label(labels, key) for key in ARRAY_KEYS},
    )
    cache: dict[str, Any] = {"policy": policy, "array": build_array(request)}
    for key, (field, kind) in PARAMETERS.items():
        if key in given:
            cache[field] = _parameter(given[key], kind, _label(labels, key))
    return cache


def cache_path_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """Scenario paths under ``array.cache`` -> the user's labels, for ``limits.relabel``."""
    paths = {"array.cache": _label(labels, "policy").rsplit(".", 1)[0]}
    paths["array.cache.policy"] = _label(labels, "policy")
    paths["array.cache.array"] = _label(labels, "drive")
    for key, (field, _) in PARAMETERS.items():
        paths[f"array.cache.{field}"] = _label(labels, key)
    return paths


def attach_cache(
    array: Mapping[str, Any], values: Mapping[str, Any], labels: Mapping[str, str]
) -> dict[str, Any]:
    """``array`` with the cache ``values`` built and checked by the native side (no
    cache when every value is None)."""
    if all(value is None for value in values.values()):
        return dict(array)
    with_cache = {**array, "cache": build_cache(values, labels)}
    limits.refused(native.validate_array(with_cache), cache_path_labels(labels))
    return with_cache


def cache_table_values(
    document: Mapping[str, Any], source: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``[cache]`` table of a parsed array TOML document and its labels."""
    table = document.get("cache", {})
    if not isinstance(table, Mapping):
        raise RaidlabError(f"{source}: cache", "expected a table [cache]")
    for key in table:
        if key not in CACHE_KEYS:
            raise RaidlabError(
                f"{source}: cache.{key}", f"unknown key '{key}'; allowed: {', '.join(CACHE_KEYS)}"
            )
    return dict(table), {key: f"{source}: cache.{key}" for key in CACHE_KEYS}
