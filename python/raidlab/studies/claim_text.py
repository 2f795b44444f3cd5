"""Claims without a hand-written check, checked from their own text.

A row of a claims file says what was measured in words: ``config`` ("RAID5 4x SSD HWR
(MegaRAID 9361)"), ``metric`` ("random_write_iops_penalty_vs_single_ssd"), ``value``,
``unit`` and ``condition`` ("4KB random write; 'about'"). :func:`interpret` reads them
into the same :class:`~raidlab.studies.claims.Check` a hand-written check would be --
the study's runs (IOPS at the SNIA PTS's 2 jobs x QD 16, latency at QD 1, throughput as
TKperf's throughput test), the study's metric and the study's tolerance for the words
used -- or into the reason it cannot: what in the text raidlab did not understand.

Parse, then build: :func:`parse_config` and :func:`parse_metric` turn the words into
plain data (setups, a measure, a relation) and raise :class:`NotExpressible` with the
reason; :func:`interpret` only builds checks from what they return.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario.array import (
    ArrayRequest,
    array_capacity_bytes,
    build_array,
    raw_capacity_bytes,
)
from raidlab.scenario.presets import preset, preset_names
from raidlab.studies.claim_metric import (
    COUNT_UNITS,
    FACTOR_UNITS,
    LEVEL_OF_CONFIG,
    PERCENT_UNITS,
    Measure,
    NotExpressible,
    Relation,
    op_percent_in_name,
    settle,
)
from raidlab.studies.claim_metric import parse_metric as read_metric
from raidlab.studies.claims import (
    ABOUT,
    BLOCK,
    DRIVE,
    DRIVE_STATE,
    HDD,
    HWR,
    HWR_WRITE_BACK,
    IOPS_MIX_READ,
    LATENCY_DIFFERENCE_MS,
    LATENCY_MIX_READ,
    NOT_COVERED_DATASHEET,
    NOT_COVERED_GENERIC,
    NOT_COVERED_RANGE,
    PERCENT_PP,
    PTS_IODEPTH,
    PTS_NUMJOBS,
    SIGNIFICANTLY,
    STRIPE_UNIT,
    SWR,
    UNCHANGED,
    WORKLOADS,
    Check,
    Results,
    Run,
    Setup,
    Tolerance,
    mean_latency_ms,
    mix_text,
    total_iops,
)

FROM_TEXT = "(from the claim's text)"
# The study's tolerances, by the shape of the figure (claims.py's hand-written checks):
READ_AHEAD_ON = "always"  # MegaRAID's "Always Read Ahead", as Q07/Q08 compare
THROUGHPUT_BS = "1M"  # TKperf's throughput test: 1,024 KiB blocks unless stated
LEVELS = (0, 1, 5, 6, 10, 50, 60)
DRIVE_COUNT_MAX = 64
COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "eight": 8}


@dataclass(frozen=True)
class ClaimText:
    """One row of a claims file, as its text."""

    claim_id: str
    config: str
    metric: str
    value: float
    value_text: str
    unit: str
    condition: str

    @classmethod
    def of(cls, claim_id: str, row: Mapping[str, Any]) -> ClaimText:
        def text(key: str) -> str:
            value = row.get(key)
            return (
                ""
                if value is None or (isinstance(value, float) and math.isnan(value))
                else str(value)
            )

        value = row.get("value")
        number = float(value) if isinstance(value, int | float) else _number(text("value"))
        return cls(
            claim_id,
            text("config"),
            text("metric"),
            number,
            text("value_text") or text("value"),
            text("unit"),
            text("condition"),
        )


def _number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return float("nan")


# --- config ----------------------------------------------------------------------


def _refusal(config: str, condition: str, metric: str, unit: str) -> str | None:
    """Why a row is no configuration to simulate, if it says so in its words."""
    if _datasheet(config, condition) and not re.search(INTEL_DC_MODEL, config, re.IGNORECASE):
        # A datasheet figure of a drive raidlab has no preset for.
        return NOT_COVERED_DATASHEET
    if unit.upper() in ("USD", "EUR", "$") or re.search(r"cost|price", metric):
        return NOT_COVERED_RANGE
    if "example" in metric:
        return "flash geometry example, not a measurement"
    if config.lower().startswith("methodology"):
        return "methodology, used as the method, not a result"
    if config.lower().startswith("generic"):
        return NOT_COVERED_GENERIC
    return None


INTEL_DC_MODEL = r"\b(S\d{4})\W*(\d+)\s*GB\b"


def _datasheet(config: str, condition: str) -> bool:
    """Whether a row states a drive's datasheet figure."""
    words = f"{config} {condition}".lower()
    return "datasheet" in words or "manufacturer spec" in words


def _levels(config: str) -> list[int]:
    found = [int(level) for level in re.findall(r"\bRAID[ -]?(\d+)\b", config, re.IGNORECASE)]
    for level in found:
        if level not in LEVELS:
            raise NotExpressible(f"config '{config}': RAID {level} is not a level raidlab has")
    return list(dict.fromkeys(found))


def _drive_count(config: str, level: int) -> int:
    match = re.search(r"\b(\d+)\s*x\b", config) or re.search(
        r"\b(\d+)\s+(?:SSDs|HDDs|drives|disks)\b", config
    )
    if match:
        count = int(match.group(1))
    else:
        words = re.search(r"\b(" + "|".join(COUNT_WORDS) + r")\b", config, re.IGNORECASE)
        if words:
            count = COUNT_WORDS[words.group(1).lower()]
        elif level == 1:
            count = 2  # a mirror of two, as every RAID 1 of the article
        else:
            raise NotExpressible(f"config '{config}' names RAID {level} but no drive count")
    if not 1 <= count <= DRIVE_COUNT_MAX:
        raise NotExpressible(f"config '{config}': {count} drives is outside 1-{DRIVE_COUNT_MAX}")
    return count


def _drive(config: str) -> str:
    """The drive preset a config names: an Intel DC model and capacity, an HDD, or the
    study's SSD ("SSD" or nothing)."""
    model = re.search(INTEL_DC_MODEL, config, re.IGNORECASE)
    if model:
        name = f"intel-dc-{model.group(1).lower()}-{model.group(2)}g"
        if name not in preset_names("drive"):
            raise NotExpressible(f"config '{config}': drive {model.group(0)} has no raidlab preset")
        return name
    if re.search(r"\bHDDs?\b", config):
        return HDD
    if re.search(r"\b(Samsung|Crucial|Micron|Kingston|Seagate|Toshiba|WD|Western)\b", config):
        raise NotExpressible(f"config '{config}': its drive is not one of the article's presets")
    return DRIVE


# Controller words -> raidlab preset, most specific first ("HWR (MegaRAID 9361)" is 9361).
CONTROLLER_WORDS: tuple[tuple[str, str], ...] = (
    (r"MegaRAID\s*9361", "megaraid-9361"),
    (r"MegaRAID\s*9365", HWR),
    (r"\bHWR\b|hardware|MegaRAID|\bLSI\b|\bAvago\b", HWR),
    (r"\bSWR\b|mdadm|\bmd\b|software", SWR),
)


# Controllers of other vendors, which the article did not test and raidlab has no preset of.
OTHER_CONTROLLERS = (
    r"\b(Adaptec|PERC|HighPoint|Areca|Microsemi|Smart ?Array|RocketRAID|ZFS|Storage Spaces|RST)"
    r"\b[\w -]*?(?=[,;)]|$)"
)


def _controllers(config: str, drives: int, hardware_only: bool) -> dict[str, str]:
    """Variant name -> controller preset. A config naming both ("SWR and HWR") or
    neither is checked on both, as the hand-written checks of the article do; a
    write-back cache or read-ahead is a hardware controller's."""
    if drives == 1 and not re.search(r"\bRAID", config, re.IGNORECASE):
        if hardware_only:
            raise NotExpressible(
                f"config '{config}': one drive on the HBA has no controller cache or read-ahead"
            )
        return {"": "hba"}
    other = re.search(r"MegaRAID\s*(\d{4})", config) or re.search(OTHER_CONTROLLERS, config)
    if other and other.group(0)[-4:] not in ("9361", "9365"):
        raise NotExpressible(
            f"config '{config}': controller '{other.group(0)}' has no raidlab preset (the "
            "article's are MegaRAID 9365 (HWR), MegaRAID 9361 and mdadm (SWR))"
        )
    named: dict[str, str] = {}
    for pattern, controller in CONTROLLER_WORDS:
        variant = "SWR" if controller == SWR else "HWR"
        if variant not in named and re.search(pattern, config, re.IGNORECASE):
            named[variant] = controller
    if not named:
        named = {"SWR": SWR, "HWR": HWR}
    if hardware_only and "HWR" not in named:
        raise NotExpressible(
            f"config '{config}': its write-back cache or read-ahead is a hardware "
            "controller's (MegaRAID), and it names software RAID only"
        )
    if hardware_only:
        named = {"HWR": named["HWR"]}
    named = {variant: named[variant] for variant in ("SWR", "HWR") if variant in named}
    return {"": next(iter(named.values()))} if len(named) == 1 else named


READ_AHEAD = r"read[- ]?ahead"
READ_AHEAD_WORDS: tuple[tuple[str, str], ...] = (
    (rf"{READ_AHEAD}\s+(off|none|disabled)\b|\bno {READ_AHEAD}|without {READ_AHEAD}", "none"),
    (rf"{READ_AHEAD}\s+adaptive|adaptive {READ_AHEAD}", "adaptive"),
    (rf"{READ_AHEAD}\s+(on|always|enabled)\b|with {READ_AHEAD}|always {READ_AHEAD}", READ_AHEAD_ON),
)


def _read_ahead(words: str) -> str | None:
    """MegaRAID's read-ahead policy the words name, None where they name none."""
    return next((mode for pattern, mode in READ_AHEAD_WORDS if re.search(pattern, words)), None)


VS = r"(?:vs\.?|versus|and)"
# A setting a config compares on against off ("read-ahead on vs off"): the claim is
# about the ratio of the two.
SWITCH_WORDS: tuple[tuple[str, str], ...] = (
    (rf"{READ_AHEAD},? (on {VS} off|off {VS} on)", "read_ahead"),
    (rf"write[- ]?back {VS} write[- ]?through|write[- ]?through {VS} write[- ]?back", "write_back"),
)


def _switched(words: str) -> str:
    return next((name for pattern, name in SWITCH_WORDS if re.search(pattern, words)), "")


def _write_back(words: str) -> bool | None:
    """The write policy the words state, None where they state none."""
    if re.search(
        r"write[- ]?through|write cache off|without (a |the )?(write )?cache|\bwt\b", words
    ):
        return False
    if re.search(r"write[- ]?back|write cache on|\bwb\b", words):
        return True
    return None


def _policy(controller: str, stated: bool | None) -> bool:
    """A setup's write policy: the one stated, else the controller preset's default,
    as `raidlab run` takes it (the MegaRAIDs' write-back, claims.HWR_WRITE_BACK for the
    9365 of Figures 2-3; no cache, no write-back)."""
    if stated is not None:
        return stated
    if controller == HWR:
        return HWR_WRITE_BACK
    table = preset("controller", controller, "controller")
    return bool(table.get("cache_bytes")) and bool(table.get("write_back", False))


def _op_percent(words: str) -> float:
    match = re.search(
        r"(\d+(?:\.\d+)?)\s*%\s*(?:extra\s+|user\s+|of\s+)?"
        r"(?:over[- ]?provisioning|op\b|spare area)",
        words,
    )
    return float(match.group(1)) if match else 0.0


def _state(words: str) -> str:
    return "fob" if re.search(r"\bfob\b|\bfresh\b|secure[- ]?erase", words) else DRIVE_STATE


@dataclass(frozen=True)
class Config:
    """What a config names: variant -> setup, and the levels it compares (two for
    "RAID5 vs RAID10")."""

    setups: dict[str, Setup]
    levels: tuple[int, ...]
    switched: str = ""  # a Setup field the config compares on against off


def parse_config(
    config: str,
    condition: str,
    compares_levels: bool = False,
    hardware_only: bool = False,
    counts_drives: bool = False,
) -> Config:
    """The setups of a config and condition (modifiers may be in either);
    ``compares_levels`` where the metric compares two levels ("RAID5 vs RAID10"),
    ``hardware_only`` where it switches a hardware controller's setting,
    ``counts_drives`` where the metric is a drive count (the config needs none: its
    setups have the level's fewest drives)."""
    words = f"{config} {condition}".lower()
    levels = _levels(config)
    single = re.search(r"\bsingle\b|\bone (SSD|drive|HDD)\b", config, re.IGNORECASE)
    if not levels and single:
        levels = [0]
    if not levels:
        raise NotExpressible(f"config '{config}' names no RAID level and no single drive")
    if len(levels) > (2 if compares_levels else 1):
        raise NotExpressible(
            f"config '{config}' names {len(levels)} RAID levels; its metric is about "
            f"{'two' if compares_levels else 'one'}"
        )
    if counts_drives:
        drives = _counted_drives(config, levels[0])[0]
    else:
        drives = 1 if single and levels == [0] else _drive_count(config, levels[0])
    switched = _switched(words)
    read_ahead = None if switched == "read_ahead" else _read_ahead(words)
    stated = None if switched == "write_back" else _write_back(words)
    hardware_only = hardware_only or bool(stated) or read_ahead is not None or bool(switched)
    controllers = _controllers(config, drives, hardware_only)
    drive = _drive(config)
    setups = {
        variant: Setup(
            name=_setup_name(levels[0], drives, variant, drive),
            controller=controller,
            level=levels[0],
            drives=drives,
            state=_state(words),
            drive=drive,
            write_back=_policy(controller, stated),
            op_percent=_op_percent(words),
            read_ahead=read_ahead,
        )
        for variant, controller in controllers.items()
    }
    return Config(setups, tuple(levels), switched)


# The drive counts a level is built with (raidlab_layout: RAID 1 mirrors two, RAID 10
# takes pairs): its fewest, and the step between counts.
LEVEL_COUNTS = {0: (2, 1), 1: (2, 1), 5: (3, 1), 6: (4, 1), 10: (4, 2)}
COUNT_MAX = 16  # the largest array a drive-count claim is searched over


def _counted_drives(config: str, level: int) -> tuple[int, int]:
    """The fewest drives of ``level`` and the step between counts (a drive-count claim)."""
    if level not in LEVEL_COUNTS or level == 1:
        raise NotExpressible(
            f"config '{config}': a drive count is searched over RAID 0, 5, 6 and 10, "
            f"not RAID {level}"
        )
    return LEVEL_COUNTS[level]


def _setup_name(level: int, drives: int, variant: str, drive: str) -> str:
    if drives == 1:
        return f"single {drive}"
    return f"RAID {level} of {drives} {variant}".rstrip()


def single_of(setup: Setup) -> Setup:
    """One drive of ``setup`` on the HBA, in its state and over-provisioning: the
    article's "single SSD"."""
    return dataclasses.replace(
        setup,
        name=f"single {setup.drive}",
        controller="hba",
        level=0,
        drives=1,
        write_back=False,
        read_ahead=None,
    )


# --- metric ----------------------------------------------------------------------


# The units a figure may be stated in, by what raidlab computes, and the factor from
# raidlab's unit (the first) to each.
UNITS: dict[str, dict[str, float]] = {
    "iops": {"IOPS": 1.0, "KIOPS": 1e-3, "K IOPS": 1e-3},
    "mbps": {
        "MBPS": 1.0,
        "MB/S": 1.0,
        "KB/S": 1e3,
        "GBPS": 1e-3,
        "GB/S": 1e-3,
        "MIB/S": 1e6 / 2**20,
        "GIB/S": 1e6 / 2**30,
    },
    "latency": {"MS": 1.0, "US": 1e3, "µS": 1e3, "μS": 1e3, "S": 1e-3},
    "percent": {unit: 1.0 for unit in PERCENT_UNITS},
    "x": {unit: 1.0 for unit in FACTOR_UNITS},
}


def parse_metric(
    metric: str, condition: str, unit: str = ""
) -> tuple[Measure | None, Relation, tuple[int, ...]]:
    """The measure and relation a metric name states (``claim_metric``), and the levels
    it compares; a name without a workload takes its condition's."""
    try:
        workloads: tuple[str, ...] | None = _workloads_of(condition, metric)
    except NotExpressible:
        workloads = None
    measure, relation, levels = read_metric(metric, workloads, unit)
    if measure is not None:
        sizes = measure.block_sizes
        block_sizes = (
            tuple(dict.fromkeys(_block(size) for size in sizes))
            if sizes
            else _blocks_of(condition, measure.kind)
        )
        measure = dataclasses.replace(measure, block_sizes=block_sizes)
    return measure, relation, levels


def _workloads_of(condition: str, metric: str) -> tuple[str, ...]:
    words = condition.lower()
    if re.search(r"all three workloads|read, mixed(,| and) write", words):
        return ("read", "mixed", "write")
    if _stated_mix(words) is not None or re.search(r"mixed|randrw|read/write", words):
        return ("mixed",)
    if re.search(r"\bread", words):
        return ("read",)
    if re.search(r"\bwrite", words):
        return ("write",)
    raise NotExpressible(
        f"metric '{metric}' names no workload (read, write or mixed) and neither does its condition"
    )


def _stated_mix(words: str) -> int | None:
    """The reads' share a condition states as a ratio ("65/35", "70:30"), else None."""
    for read, write in re.findall(r"\b(\d{1,3})\s*[/:]\s*(\d{1,3})\b", words):
        if int(read) + int(write) == 100:
            return int(read)
    return None


def _block(size: str) -> str:
    """``8k`` / ``1024KB`` / ``1,024`` / ``1m`` -> fio's ``8K`` / ``1M``."""
    number = int(re.sub(r"[^\d]", "", size))
    if re.search(r"m(i?b)?$", size.lower()):
        number *= 1024
    return f"{number // 1024}M" if number % 1024 == 0 else f"{number}K"


def _blocks_of(condition: str, kind: str) -> tuple[str, ...]:
    """Block sizes stated in the condition ("4KB", "64KB or 1,024KB"; "1MB" for
    throughput), else the method's."""
    units = "KB|KiB|K|MB|MiB" if kind == "mbps" else "KB|KiB|K"
    sizes = ["".join(size) for size in re.findall(rf"(\d[\d,]*)\s*({units})\b", condition)]
    if sizes:
        return tuple(dict.fromkeys(_block(size) for size in sizes))
    return (THROUGHPUT_BS,) if kind == "mbps" else (BLOCK,)


def _unit_class(row: ClaimText, measure: Measure | None) -> str:
    """What the claim's unit is: ``percent``, ``x`` (a factor), ``measure`` (the
    measure's own unit), ``count`` (drives) or "" (none, a qualitative claim)."""
    unit = row.unit.strip().upper()
    if not unit:
        return ""
    if unit in UNITS["percent"]:
        return "percent"
    if unit in UNITS["x"]:
        return "x"
    if measure is not None and unit in UNITS[measure.kind]:
        return "measure"
    if unit in COUNT_UNITS:
        return "count"
    return "unknown"


def settle_unit(
    row: ClaimText, measure: Measure | None, relation: Relation
) -> tuple[Relation, float]:
    """The relation as the claim's unit states it (a change in percent, as a factor
    or in the measure's unit: ``claim_metric.settle``) and the factor from raidlab's
    unit to the claim's; a qualitative claim may state no unit."""
    unit, unit_class = row.unit.strip().upper(), _unit_class(row, measure)
    if relation.kind == "capacity":
        expected = "percent"
    elif relation.kind == "count":
        if math.isnan(row.value) or row.value < 1:
            raise NotExpressible(f"value '{row.value_text}' is not a drive count")
        if unit_class in ("count", "") and unit not in UNITS["percent"]:
            return relation, 1.0
        raise NotExpressible(
            f"unit '{row.unit}' does not fit metric '{row.metric}' (a drive count: drives)"
        )
    elif relation.kind == "value":
        expected = measure.kind if measure else "percent"
    else:
        if not unit_class and math.isnan(row.value):
            return relation, 1.0
        if unit_class in ("", "unknown", "count"):
            raise NotExpressible(
                f"unit '{row.unit}' does not fit metric '{row.metric}' (a comparison is "
                f"in percent, x or the measure's unit"
                f"{', ' + next(iter(UNITS[measure.kind])) if measure else ''})"
            )
        relation = settle(relation, unit_class)
        expected = measure.kind if unit_class == "measure" and measure else unit_class
    if not unit and math.isnan(row.value):
        return relation, 1.0
    if unit not in UNITS[expected]:
        raise NotExpressible(
            f"unit '{row.unit}' does not fit metric '{row.metric}' (raidlab gives it in "
            f"{next(iter(UNITS[expected]))})"
        )
    return relation, UNITS[expected][unit]


# --- tolerance -------------------------------------------------------------------

LOWER_WORDS = r"more than|at least|lower bound|\bexceeds\b|\bover \d"
UPPER_WORDS = r"less than|upper bound|at most|\bbelow \d|\bunder \d"


def parse_tolerance(
    row: ClaimText, relation: Relation, factor: float = 1.0, kind: str = "latency"
) -> Tolerance:
    """The study's tolerance for the claim's words and shape (see the constants);
    ``factor`` from raidlab's unit to the claim's, ``kind`` the measure's (a
    difference of latencies is held to LATENCY_DIFFERENCE_MS, of IOPS or MB/s to the
    study's "about")."""
    # "more_than_double" in a metric name bounds the figure as the condition would.
    named = " ".join(re.findall(r"more_than|at_least", row.metric.lower())).replace("_", " ")
    words = f"{row.condition} {row.value_text} {named}".lower()
    if relation.kind == "capacity":
        return _geometry_tolerance(row)
    if math.isnan(row.value):
        return _qualitative_tolerance(row, relation)
    if re.search(LOWER_WORDS, words):
        return Tolerance("lower_bound")
    if re.search(UPPER_WORDS, words):
        return Tolerance("upper_bound")
    claimed_range = re.search(r"range\s+\$?([\d.]+)\s*-\s*\$?([\d.]+)", words)
    if claimed_range:
        low, high = (float(claimed_range.group(n)) for n in (1, 2))
        return Tolerance("range", low * (1 - ABOUT), row.unit, high * (1 + ABOUT))
    if relation.kind in ("penalty", "gain"):
        return Tolerance("absolute", PERCENT_PP, "pp")
    if relation.kind in ("difference", "decrease") and kind == "latency":
        return Tolerance("absolute", LATENCY_DIFFERENCE_MS * factor, row.unit or "ms")
    if relation.kind == "count":
        # A drive count is a whole number: the claim's count or not.
        return Tolerance("exact")
    # "around", "about", "nearly", "up to" or a plain figure: T01, T02, T22, T28, T33.
    return Tolerance("relative", ABOUT)


APPROXIMATELY = r"about|around|approximately|nearly|almost|roughly|~"


def _geometry_tolerance(row: ClaimText) -> Tolerance:
    """Geometry is exact (T21); a figure stated as approximate is held to its rounding
    (half a unit of its last digit: "about 66.7 %" takes 66.65-66.75)."""
    if not re.search(APPROXIMATELY, f"{row.condition} {row.value_text}".lower()):
        return Tolerance("exact")
    decimals = len(row.value_text.partition(".")[2].strip())
    return Tolerance("absolute", 0.5 * 10.0**-decimals, "pp")


def _qualitative_tolerance(row: ClaimText, relation: Relation) -> Tolerance:
    """A value that is not a number, as the hand-written Q checks read it: ">1" a
    direction (above 1.1 where the article says "significantly" or "major"), "5-10" a
    range, "no difference" a ratio within 1 ± 10 %, "higher ..." a ratio above 1.1."""
    text = row.value_text.strip().lower()
    strength = SIGNIFICANTLY if re.search(r"significant|major", row.condition.lower()) else 1.0
    above = re.fullmatch(r">\s*([\d.]+)", text)
    between = re.fullmatch(r"([\d.]+)\s*-\s*([\d.]+)", text)
    if between:
        low, high = float(between.group(1)), float(between.group(2))
        return Tolerance("range", low, row.unit, high)
    if relation.kind != "ratio":
        raise NotExpressible(
            f"value '{row.value_text}' is not a number, and metric '{row.metric}' is no ratio "
            "to hold it against"
        )
    if above:
        return Tolerance("direction", float(above.group(1)) * strength, "x")
    if re.search(r"no difference|unchanged|not affect|the same", text):
        return Tolerance("unchanged", UNCHANGED)
    if re.search(r"on (a )?par|similar|comparable|roughly equal|about the same|\blike\b", text):
        # "On a par" is an "about": the study's ±20 %, wider than "no difference".
        return Tolerance("unchanged", ABOUT)
    if re.search(r"minimally|slightly|marginally|just above|a little", text):
        # Above, but by less than "significantly" (Q04's "only minimally above").
        return Tolerance("range", 1.0, "x", SIGNIFICANTLY)
    if re.search(r"\bhigher|\bmore\b|faster|better", text):
        return Tolerance("direction", SIGNIFICANTLY, "x")
    if re.search(r"\blower|\bless\b|\bfewer|slower|worse|below", text):
        return Tolerance("range", 0.0, "x", 1.0 / SIGNIFICANTLY)
    raise NotExpressible(
        f"value '{row.value_text}' is neither a number nor a direction raidlab reads "
        "(it reads '>1', '5-10', 'no difference', 'on a par', 'minimally above', 'higher', "
        "'lower')"
    )


# --- runs and metrics ------------------------------------------------------------


def measure_run(setup: Setup, measure: Measure, workload: str, bs: str, condition: str) -> Run:
    """The study's run of a measure: IOPS at the PTS's outstanding I/O, latency at QD 1,
    throughput as TKperf's throughput test -- 1 job x QD 1 where read-ahead is the
    point or the claim says single-threaded (Q07, Q08), else the PTS's outstanding
    I/O on drives secure-erased before the block size (Q09)."""
    stated = _outstanding(condition)
    mix = _stated_mix(condition.lower())
    sequential = measure.access == "seq" or (measure.kind == "mbps" and measure.access != "random")
    rw = SEQUENTIAL[workload] if sequential else WORKLOADS[workload]
    if measure.kind == "iops":
        outstanding = stated or (PTS_NUMJOBS, PTS_IODEPTH)
        return Run(setup, rw, *outstanding, bs, rwmixread=mix or IOPS_MIX_READ)
    if measure.kind == "latency":
        outstanding = stated or (1, 1)
        mix = mix or LATENCY_MIX_READ
        return Run(setup, rw, *outstanding, bs, rwmixread=mix)
    if setup.read_ahead is not None or "single-threaded" in condition.lower():
        return Run(setup, rw, *(stated or (1, 1)), bs, rwmixread=mix or IOPS_MIX_READ)
    fob = dataclasses.replace(setup, state="fob")
    outstanding = stated or (PTS_NUMJOBS, PTS_IODEPTH)
    return Run(fob, rw, *outstanding, bs, rwmixread=mix or IOPS_MIX_READ)


SEQUENTIAL = {"read": "read", "write": "write", "mixed": "rw"}
# The workload before each in the SNIA PTS latency test's order (read, mixed, write).
PREVIOUS_WORKLOAD = {"mixed": "read", "write": "mixed"}


def _outstanding(condition: str) -> tuple[int, int] | None:
    """Jobs and queue depth where the condition states them ("QD 32", "4 jobs x QD 8")."""
    depth = re.search(r"\bQD\s*(\d+)|queue depth (?:of )?(\d+)", condition, re.IGNORECASE)
    if not depth:
        return None
    jobs = re.search(r"\b(\d+)\s*(?:jobs|threads)\b", condition, re.IGNORECASE)
    numjobs, iodepth = int(jobs.group(1)) if jobs else 1, int(depth.group(1) or depth.group(2))
    if not (1 <= numjobs <= 64 and 1 <= iodepth <= 1024):
        raise NotExpressible(
            f"condition '{condition}': {numjobs} jobs x QD {iodepth} is out of range"
        )
    return numjobs, iodepth


def _value(run: Run, kind: str) -> Callable[[Results], float]:
    if kind == "latency":
        return lambda results: mean_latency_ms(results[run])
    if kind == "mbps":
        return lambda results: float(sum(float(s["mbps"]) for s in results[run]["ops"].values()))
    return lambda results: total_iops(results[run])


def _combine(relation: Relation, kind: str, run: Run, base: Run) -> Callable[[Results], float]:
    value, baseline = _value(run, kind), _value(base, kind)
    if relation.kind == "ratio":
        return lambda results: value(results) / baseline(results)
    if relation.kind == "penalty":
        return lambda results: 100.0 * (1.0 - value(results) / baseline(results))
    if relation.kind == "gain":
        return lambda results: 100.0 * (value(results) / baseline(results) - 1.0)
    if relation.kind == "inverse":
        return lambda results: baseline(results) / value(results)
    if relation.kind == "percent_of":
        return lambda results: 100.0 * value(results) / baseline(results)
    if relation.kind == "decrease":
        return lambda results: baseline(results) - value(results)
    return lambda results: value(results) - baseline(results)


def _baseline(setup: Setup, relation: Relation, levels: tuple[int, ...]) -> Setup:
    if relation.against == "single":
        if setup.drives == 1:
            raise NotExpressible("a single drive compared with a single drive")
        return single_of(setup)
    if relation.against == "level":
        return dataclasses.replace(setup, name=f"{setup.name} as RAID {levels[1]}", level=levels[1])
    if relation.against == "workload":
        return setup
    if relation.against == "drives":
        return _with_drives(setup, relation.baseline_drives)
    off = {"write_back": False, "read_ahead": "none", "op_percent": 0.0}[relation.modifier]
    return dataclasses.replace(
        setup, name=f"{setup.name} without {relation.modifier}", **{relation.modifier: off}
    )


def _with_drives(setup: Setup, drives: int) -> Setup:
    """The setup's level with ``drives`` drives (a baseline "vs three SSDs")."""
    fewest, step = LEVEL_COUNTS.get(setup.level, (1, 1))
    if drives < fewest or (drives - fewest) % step:
        raise NotExpressible(f"RAID {setup.level} is not built of {drives} drives")
    name = _setup_name(setup.level, drives, "", setup.drive)
    return dataclasses.replace(setup, name=f"{name} ({setup.controller})", drives=drives)


def _with_modifier(setup: Setup, relation: Relation, condition: str) -> Setup:
    """The setup with the metric's modifier on (``..._with_writeback``)."""
    if relation.against != "modifier":
        return setup
    if relation.modifier == "write_back":
        setup = dataclasses.replace(setup, write_back=True)
    elif relation.modifier == "read_ahead":
        setup = dataclasses.replace(setup, read_ahead=READ_AHEAD_ON)
    elif not setup.op_percent:
        raise NotExpressible(f"condition '{condition}' states no over-provisioning percentage")
    return setup


# --- the checks ------------------------------------------------------------------


def interpret(claim_id: str, row: Mapping[str, Any]) -> list[Check] | str:
    """The checks of a claim row read from its text, or why it cannot be checked."""
    text = ClaimText.of(claim_id, row)
    refusal = _refusal(text.config, text.condition, text.metric, text.unit)
    if refusal:
        return refusal
    try:
        return claim_checks(text)
    except NotExpressible as reason:
        return str(reason)


def _op_of_name(row: ClaimText) -> ClaimText:
    """The row with an over-provisioning percentage its metric names
    ("gain_with_20_percent_overprovisioning") in its condition, where the condition
    states none."""
    percent = op_percent_in_name(row.metric)
    if percent is None or re.search(r"\d\s*%", row.condition):
        return row
    stated = f"{percent:g}% overprovisioning"
    return dataclasses.replace(row, condition=f"{row.condition}; {stated}".strip("; "))


@dataclass(frozen=True)
class Reading:
    """A row read: what is measured, how the figure is made of it, the levels compared
    (first measured, second the baseline), the tolerance and the unit's factor."""

    row: ClaimText
    measure: Measure | None
    relation: Relation
    levels: tuple[int, ...]
    tolerance: Tolerance
    factor: float


def claim_checks(row: ClaimText) -> list[Check]:
    """The checks of a row: one per controller variant, workload and block size."""
    row = _op_of_name(row)
    measure, relation, levels = parse_metric(row.metric, row.condition, row.unit)
    config = parse_config(
        row.config,
        row.condition,
        compares_levels=relation.against == "level",
        hardware_only=relation.modifier in ("write_back", "read_ahead"),
        counts_drives=relation.kind == "count",
    )
    config = _variants(row, config, relation)
    relation = _implied_baseline(relation, config)
    if config.switched and relation.kind == "value" and not relation.against:
        # "read-ahead on vs off" and a figure of one measure: the ratio of on to off.
        if row.unit.strip().lower() not in ("x", ""):
            raise NotExpressible(
                f"config '{row.config}' compares {config.switched} on and off, and a figure "
                f"in {row.unit} is of one of them"
            )
        relation = Relation("ratio", "modifier", config.switched)
    if relation.named_drives and any(
        setup.drives != relation.named_drives for setup in config.setups.values()
    ):
        raise NotExpressible(
            f"metric '{row.metric}' names {relation.named_drives} drives, config "
            f"'{row.config}' another count"
        )
    if relation.against == "level":
        levels = _compared_levels(row, levels, config)
    elif levels:
        # The metric names the config's level again ("raid5_random_write_iops").
        if list(config.levels) != [levels[0]]:
            raise NotExpressible(
                f"metric '{row.metric}' names RAID {levels[0]}, config '{row.config}' another"
            )
        levels = ()
    relation, factor = settle_unit(row, measure, relation)
    tolerance = parse_tolerance(row, relation, factor, measure.kind if measure else "")
    reading = Reading(row, measure, relation, levels, tolerance, factor)
    if measure is None:
        return [_capacity_check(reading, next(iter(config.setups.values())))]
    if relation.against == "controller":
        return _controller_checks(reading, config)
    return [
        _check(reading, _label(variant, workload, bs, measure), setup, workload, bs)
        for variant, setup in _setups(config, relation, levels, row.condition)
        for workload in measure.workloads
        for bs in measure.block_sizes
    ]


def _implied_baseline(relation: Relation, config: Config) -> Relation:
    """A change with no baseline named: against the setting the config or condition
    switches on ("random_write_iops_gain", "20% overprovisioning"; "read-ahead on"),
    else against a single drive."""
    if not relation.implied:
        return relation
    setup = next(iter(config.setups.values()))
    if setup.op_percent:
        return dataclasses.replace(relation, against="modifier", modifier="op_percent")
    if setup.read_ahead not in (None, "none"):
        return dataclasses.replace(relation, against="modifier", modifier="read_ahead")
    return relation


def _variants(row: ClaimText, config: Config, relation: Relation) -> Config:
    """The config's setups the metric is about: the one controller it names
    ("latency_added_by_hwr"), or both where it compares them (the config's, else the
    study's: SWR linux-md, HWR the 9365)."""

    def variant_of(setup: Setup) -> str:
        return "SWR" if setup.controller == SWR else "HWR"

    setups = {variant_of(setup): setup for setup in config.setups.values()}
    if relation.against == "controller":
        for variant, controller in (("SWR", SWR), ("HWR", HWR)):
            if variant not in setups:
                other = next(iter(setups.values()))
                setups[variant] = dataclasses.replace(
                    other,
                    name=_setup_name(other.level, other.drives, variant, other.drive),
                    controller=controller,
                    write_back=_policy(controller, None),
                )
        if any(setup.drives == 1 for setup in setups.values()):
            raise NotExpressible(f"config '{row.config}': controllers compared on one drive")
        return dataclasses.replace(config, setups=setups)
    if relation.variant:
        if relation.variant not in setups:
            raise NotExpressible(
                f"metric '{row.metric}' is about {relation.variant}, config '{row.config}' "
                f"names {' and '.join(setups)}"
            )
        return dataclasses.replace(config, setups={"": setups[relation.variant]})
    return config


def _controller_checks(reading: Reading, config: Config) -> list[Check]:
    """One check per workload and block size: the figure on the metric's first
    controller against the same on the other ("seq_write_throughput_swr_vs_hwr")."""
    row, measure, relation = reading.row, reading.measure, reading.relation
    assert measure is not None
    first = config.setups[relation.first]
    other = config.setups["HWR" if relation.first == "SWR" else "SWR"]
    checks = []
    for workload in measure.workloads:
        for bs in measure.block_sizes:
            run = measure_run(first, measure, workload, bs, row.condition)
            base = measure_run(other, measure, workload, bs, row.condition)
            checks.append(
                Check(
                    row.claim_id,
                    _label("", workload, bs, measure),
                    (run, base),
                    _scaled(_combine(relation, measure.kind, run, base), reading.factor),
                    reading.tolerance,
                    f"{_formula(relation, measure.kind)} of {describe_setup(run.setup)} "
                    f"against {describe_setup(base.setup)}, {describe_workload(run)} {FROM_TEXT}",
                )
            )
    return checks


def _compared_levels(row: ClaimText, levels: tuple[int, ...], config: Config) -> tuple[int, int]:
    """The two levels of "..._raid10_vs_raid5" (or "..._vs_raid5" of a RAID 10 config)."""
    first, second = levels
    if first == LEVEL_OF_CONFIG:
        others = [level for level in config.levels if level != second]
        if len(others) != 1:
            raise NotExpressible(
                f"metric '{row.metric}' compares with RAID {second}, config '{row.config}' "
                "names no other level"
            )
        first = others[0]
    if not set(config.levels) <= {first, second}:
        raise NotExpressible(
            f"metric '{row.metric}' compares other levels than config '{row.config}'"
        )
    return first, second


def _setups(
    config: Config, relation: Relation, levels: tuple[int, ...], condition: str
) -> list[tuple[str, Setup]]:
    """The measured setups: with the metric's modifier on, at the first level compared."""
    setups = []
    for variant, setup in config.setups.items():
        setup = _with_modifier(setup, relation, condition)
        if levels:
            name = _setup_name(levels[0], setup.drives, variant, setup.drive)
            setup = dataclasses.replace(setup, level=levels[0], name=name)
        setups.append((variant, setup))
    return setups


def _label(variant: str, workload: str, bs: str, measure: Measure) -> str:
    """The check's variant: the controller, and the workload and block size where the
    claim has several (T06's "read", "mixed", "write")."""
    parts = [variant]
    if len(measure.workloads) > 1:
        parts.append(workload)
    if len(measure.block_sizes) > 1:
        parts.append(bs)
    return " ".join(part for part in parts if part)


def _capacity_check(reading: Reading, setup: Setup) -> Check:
    """Usable share of the raw capacity (geometry): the controller does not matter."""
    row = reading.row
    request = ArrayRequest(
        level=setup.level, drives=setup.drives, stripe_unit=STRIPE_UNIT, drive=setup.drive
    )
    try:
        array = build_array(request)
    except RaidlabError as error:
        raise NotExpressible(f"config '{row.config}': {error}") from error
    fraction = 100.0 * array_capacity_bytes(array) / raw_capacity_bytes(array)
    return Check(
        row.claim_id,
        "",
        (),
        lambda _: fraction,
        reading.tolerance,
        f"array_capacity_bytes / raw capacity of RAID {setup.level} of {setup.drives} drives "
        f"{FROM_TEXT}",
        role="geometry",
    )


# A datasheet's rating conditions (Intel's DC SSD specifications: IOMeter at queue
# depth 32 over the whole drive, 4 KiB random transfers for IOPS, 128 KiB sequential
# transfers for MB/s), where a row states a datasheet figure of a preset's drive.
DATASHEET_QD = 32
DATASHEET_THROUGHPUT_BS = "128K"


def datasheet_run(setup: Setup, measure: Measure, workload: str, bs: str) -> Run:
    """The run of a datasheet figure: its rating conditions, the drive in the study's
    state (steady, as Intel rates random writes)."""
    if measure.kind == "iops":
        return Run(setup, WORKLOADS[workload], 1, DATASHEET_QD, bs)
    if measure.kind == "mbps":
        return Run(setup, workload, 1, DATASHEET_QD, DATASHEET_THROUGHPUT_BS)
    return Run(setup, WORKLOADS[workload], 1, 1, bs, rwmixread=LATENCY_MIX_READ)


def _check(reading: Reading, variant: str, setup: Setup, workload: str, bs: str) -> Check:
    row, measure, relation = reading.row, reading.measure, reading.relation
    assert measure is not None
    if _datasheet(row.config, row.condition):
        if relation.kind != "value" or setup.drives != 1:
            raise NotExpressible(
                f"config '{row.config}': a datasheet figure is of one drive, not a comparison"
            )
        run = datasheet_run(setup, measure, workload, bs)
        # The drive presets are calibrated on their datasheets: such a row checks the
        # calibration, and its figure predicts nothing.
        return Check(
            row.claim_id,
            variant,
            (run,),
            _scaled(_value(run, measure.kind), reading.factor),
            reading.tolerance,
            f"{describe_run(run, measure.kind)}, the datasheet's rating conditions {FROM_TEXT}",
            role="calibration",
        )
    if relation.kind == "count":
        return _count_check(reading, variant, setup, workload, bs)
    run = measure_run(setup, measure, workload, bs, row.condition)
    if relation.kind == "value":
        runs: tuple[Run, ...] = (run,)
        metric = _value(run, measure.kind)
        how = describe_run(run, measure.kind)
    else:
        baseline = _baseline(setup, relation, reading.levels)
        # A workload step ("latency_step_read_to_write") is the same setup's figure
        # of the first workload; every other baseline is of the same workload.
        base_workload = workload
        if relation.against == "workload":
            # "previous": each step of read -> mixed -> write from the one before.
            base_workload = (
                PREVIOUS_WORKLOAD[workload] if relation.first == "previous" else relation.first
            )
        base = measure_run(baseline, measure, base_workload, bs, row.condition)
        if relation.off_measured:
            # "..._without_read_ahead": the setting off is measured against it on.
            run, base = base, run
        runs = (run, base)
        metric = _combine(relation, measure.kind, run, base)
        how = (
            f"{_formula(relation, measure.kind)} of {describe_setup(run.setup)} against "
            f"{describe_setup(base.setup)}, {describe_workload(run)}"
        )
    return Check(
        row.claim_id,
        variant,
        runs,
        _scaled(metric, reading.factor),
        reading.tolerance,
        f"{how} {FROM_TEXT}",
    )


def _count_check(reading: Reading, variant: str, setup: Setup, workload: str, bs: str) -> Check:
    """The fewest drives of the setup's level whose figure is ``factor`` times one
    drive's ("drives_to_double_random_read_iops"): arrays from the level's fewest drives
    to a step past the claimed count are simulated, and the first to reach it counts
    (NaN, a FAIL, where none does)."""
    row, measure, relation = reading.row, reading.measure, reading.relation
    assert measure is not None
    fewest, step = _counted_drives(row.config, setup.level)
    if relation.against == "drives":
        # Against a smaller array of the level ("vs three SSDs"), counts from the next one.
        base_setup = _with_drives(setup, relation.baseline_drives)
        fewest = base_setup.drives + step
    else:
        base_setup = single_of(setup)
    last = min(COUNT_MAX, max(int(row.value) + step, fewest + 2 * step))
    counts = tuple(range(fewest, last + 1, step))
    arrays = [
        measure_run(
            dataclasses.replace(
                setup, name=_setup_name(setup.level, n, variant, setup.drive), drives=n
            ),
            measure,
            workload,
            bs,
            row.condition,
        )
        for n in counts
    ]
    single = measure_run(base_setup, measure, workload, bs, row.condition)
    values = [_value(run, measure.kind) for run in arrays]
    baseline = _value(single, measure.kind)

    def fewest_reaching(results: Results) -> float:
        target = relation.factor * baseline(results)
        return next(
            (float(n) for n, value in zip(counts, values, strict=True) if value(results) >= target),
            math.nan,
        )

    return Check(
        row.claim_id,
        variant,
        (*arrays, single),
        fewest_reaching,
        reading.tolerance,
        f"fewest drives of RAID {setup.level} on {setup.controller} ({counts[0]}-{counts[-1]} "
        f"simulated) whose {QUANTITY[measure.kind]} is {relation.factor:g}x "
        f"{describe_setup(base_setup)}, {describe_workload(single)} {FROM_TEXT}",
    )


def _scaled(metric: Callable[[Results], float], factor: float) -> Callable[[Results], float]:
    return metric if factor == 1.0 else (lambda results: factor * metric(results))


# --- how it reads ----------------------------------------------------------------

QUANTITY = {"iops": "IOPS", "latency": "mean latency (ms)", "mbps": "MB/s"}


def _formula(relation: Relation, kind: str) -> str:
    quantity = QUANTITY[kind]
    return {
        "ratio": f"{quantity} ratio",
        "penalty": f"100 x (1 - {quantity} ratio)",
        "gain": f"100 x ({quantity} ratio - 1)",
        "difference": f"{quantity} difference",
        "inverse": f"inverse {quantity} ratio (baseline / measured)",
        "percent_of": f"100 x {quantity} ratio",
        "decrease": f"{quantity} decrease (baseline - measured)",
    }[relation.kind]


def describe_setup(setup: Setup) -> str:
    """``RAID 5 of 4 intel-dc-s3500-80g on linux-md (drives steady, write-back)``."""
    what = (
        f"one {setup.drive} on hba"
        if setup.drives == 1
        else f"RAID {setup.level} of {setup.drives} {setup.drive} on {setup.controller}"
    )
    extras = [f"drives {setup.state}"]
    if setup.write_back:
        extras.append("write-back")
    if setup.read_ahead is not None:
        extras.append(f"read-ahead {setup.read_ahead}")
    if setup.op_percent:
        extras.append(f"{setup.op_percent:g} % over-provisioning")
    return f"{what} ({', '.join(extras)})"


def describe_workload(run: Run) -> str:
    mix = mix_text(run)
    jobs = "job" if run.numjobs == 1 else "jobs"
    return f"{run.bs} {run.rw}{mix}, {run.numjobs} {jobs} x QD {run.iodepth}"


def describe_run(run: Run, kind: str) -> str:
    return f"{describe_setup(run.setup)}, {describe_workload(run)}: {QUANTITY[kind]}"
