"""fio's option values as fio reads them: sizes with fio's units and kb_base, times,
percentages of a region, block-size splits and ranges (with fio's rules for shares),
random distributions, percentile lists and steady-state criteria.

Every parser names the job and the option in its error (``where``, ``key``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import native
from raidlab.scenario.workloads import SECTOR_BYTES, fio_shares

_SIZE = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(i?b?)$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def fio_size(text: str, where: str, key: str, kb_base: int = 1024) -> int:
    """fio's size: ``4k``, ``4K``, ``4KiB``, ``1m``, ``512``, ``1.5g``."""
    match = _SIZE.match(text.strip())
    if match is None:
        raise RaidlabError(
            where, f"{key}: bad size {text!r} (expected e.g. 4k, 64KiB, 1m, 2g; fio units)"
        )
    number, prefix, unit = match.groups()
    base = 1024 if unit.lower() == "ib" or kb_base == 1024 else 1000
    multiplier = base ** _POWERS[prefix.lower()]
    whole, _, frac = number.partition(".")
    numerator = int(whole or "0") * 10 ** len(frac) + int(frac or "0")
    value, remainder = divmod(numerator * multiplier, 10 ** len(frac))
    if remainder:
        raise RaidlabError(where, f"{key}: {text!r} is not a whole number of bytes")
    return value


def fio_size_or_pct(text: str, where: str, key: str, capacity: int, kb_base: int) -> int:
    """A size, or ``N%`` of the array's capacity (fio: of the file or device)."""
    text = text.strip()
    if text.endswith("%"):
        pct = _number(text[:-1], where, key)
        if not 0 < pct <= 100:
            raise RaidlabError(where, f"{key}: percentage must be in (0, 100], got {text!r}")
        value = int(capacity * pct / 100) // SECTOR_BYTES * SECTOR_BYTES
        return value
    return fio_size(text, where, key, kb_base)


_TIME = re.compile(
    r"^(\d+(?:\.\d*)?|\.\d+)\s*(us|usec|ms|msec|s|sec|m|min|h|hr|d|day)?$", re.IGNORECASE
)
_TIME_NS = {
    "us": 1_000,
    "usec": 1_000,
    "ms": 1_000_000,
    "msec": 1_000_000,
    "": 1_000_000_000,
    "s": 1_000_000_000,
    "sec": 1_000_000_000,
    "m": 60_000_000_000,
    "min": 60_000_000_000,
    "h": 3_600_000_000_000,
    "hr": 3_600_000_000_000,
    "d": 86_400_000_000_000,
    "day": 86_400_000_000_000,
}


def fio_time_ns(text: str, where: str, key: str) -> int:
    """fio's time: seconds by default; us, ms, s, m, h, d suffixes."""
    match = _TIME.match(text.strip())
    if match is None:
        raise RaidlabError(where, f"{key}: bad time {text!r} (expected e.g. 30, 10s, 500ms, 2m)")
    return round(float(match[1]) * _TIME_NS[(match[2] or "").lower()])


def _number(text: str, where: str, key: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise RaidlabError(where, f"{key}: expected a number, got {text!r}") from None


def fio_int(text: str | None, where: str, key: str, low: int, high: int) -> int:
    if text is None or not re.fullmatch(r"\s*\d+\s*", text):
        raise RaidlabError(where, f"{key}: expected a whole number, got {text!r}")
    value = int(text)
    if not low <= value <= high:
        raise RaidlabError(where, f"{key}: must be {low}..={high}, got {value}")
    return value


def fio_field(text: str | None, where: str, key: str, path: str) -> int:
    """A whole number for the scenario field at ``path``, its bounds the native side's."""
    value = fio_int(text, where, key, 0, 2**64 - 1)
    refused = native.check_field(path, value, "jobs")
    if refused is not None:
        raise RaidlabError(where, f"{key}: {refused[1]}")
    return value


def fio_block(text: str, where: str, key: str, kb_base: int) -> int:
    value = fio_size(text, where, key, kb_base)
    refused = native.check_field("workload.bs", [[value, 1]], "jobs")
    if refused is not None:
        raise RaidlabError(where, f"{key}: {refused[1]}")
    return value


def parse_bssplit(text: str, where: str, key: str, kb_base: int) -> list[list[list[int]]]:
    """``4k/55:64k/25:128k/20`` (per direction: ``...,...``) -> mixes (read, write), the
    shares by fio's rules (``fio_shares``: blanks split what is left, a total under 100
    tops up the largest). Weights are hundredths of a percent."""
    mixes: list[list[list[int]]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            mixes.append([])
            continue
        entries: list[tuple[int, str | None]] = []
        for item in part.split(":"):
            if not item.strip():
                # fio stops reading the list at an empty entry and drops the rest.
                raise RaidlabError(where, f"{key}: empty entry in {part!r}")
            size_text, slash, share_text = item.partition("/")
            block = fio_block(size_text, where, key, kb_base)
            entries.append((block, share_text if slash else None))
        shares = fio_shares(entries, where, key)
        mixes.append([[block, share * 100] for block, share in shares])
    return mixes


def parse_bsrange(text: str, where: str, key: str, kb_base: int) -> list[list[int]]:
    """``4k-64k`` -> an even mix of the powers of two in the range (fio picks any
    multiple of the minimum; raidlab approximates with the powers of two)."""
    low_text, dash, high_text = text.partition("-")
    if not dash:
        raise RaidlabError(where, f"{key}: expected a range like 4k-64k, got {text!r}")
    low = fio_block(low_text, where, key, kb_base)
    high = fio_block(high_text, where, key, kb_base)
    if high < low:
        raise RaidlabError(where, f"{key}: range end is below its start in {text!r}")
    sizes = [1 << bit for bit in range(9, 31) if low <= 1 << bit <= high]
    if not sizes:
        sizes = [low] if low == high else [low, high]
    return [[size, 1] for size in sizes]


def parse_distribution(text: str, where: str, key: str) -> Any:
    """fio's random_distribution -> the scenario's ``distribution``."""
    name, colon, argument = text.strip().partition(":")
    name = name.lower()
    if name == "random" and not colon:
        return "uniform"
    if name in ("zipf", "pareto", "normal", "gauss"):
        if not argument:
            raise RaidlabError(where, f"{key}: {name} needs a parameter, e.g. {name}:1.2")
        value = _number(argument.split(",")[0], where, key)
        if name == "zipf" and not value > 0 or name == "pareto" and not 0 < value < 1:
            raise RaidlabError(where, f"{key}: {name} parameter out of range, got {argument!r}")
        if name in ("normal", "gauss") and not 0 < value <= 100:
            raise RaidlabError(where, f"{key}: normal deviation must be in (0, 100] %")
        return {"normal" if name == "gauss" else name: value}
    if name == "zoned":
        zones = []
        for item in argument.split(":"):
            access, slash, size = item.partition("/")
            if not slash:
                raise RaidlabError(where, f"{key}: zoned entries are access%/size%, got {item!r}")
            zones.append([_number(access, where, key), _number(size, where, key)])
        for index in (0, 1):
            total = sum(zone[index] for zone in zones)
            if abs(total - 100) > 1e-9:
                what = "access" if index == 0 else "size"
                raise RaidlabError(where, f"{key}: zoned {what} percentages add up to {total:g}")
        return {"zoned": zones}
    raise RaidlabError(
        where,
        f"{key}: must be random, zipf:THETA, pareto:H, normal:SIGMA or zoned:A/S:..., got {text!r}",
    )


def parse_percentile_list(text: str, where: str, key: str) -> list[float]:
    values = []
    for item in text.split(":"):
        value = _number(item, where, key)
        if not 0 < value <= 100:
            raise RaidlabError(where, f"{key}: percentiles must be in (0, 100], got {item!r}")
        values.append(value)
    return values


_SS = re.compile(r"^(iops|iops_slope|bw|bw_slope):(\d+(?:\.\d*)?)(%?)$", re.IGNORECASE)


@dataclass(frozen=True)
class SteadyState:
    """fio's ``ss=metric:limit`` with ``ss_dur`` and ``ss_ramp``."""

    metric: str  # iops, iops_slope, bw, bw_slope
    limit: float
    percent: bool
    duration_ns: int
    ramp_ns: int

    @property
    def text(self) -> str:
        return f"{self.metric}:{self.limit:f}{'%' if self.percent else ''}"


def parse_ss(text: str, where: str) -> tuple[str, float, bool]:
    match = _SS.match(text.strip())
    if match is None:
        raise RaidlabError(where, f"ss: must be iops|iops_slope|bw|bw_slope:LIMIT[%], got {text!r}")
    return match[1].lower(), float(match[2]), bool(match[3])


