"""A claim's metric name read as words: what is measured and how the figure is made of it.

A metric name is a few words joined by underscores, in whatever order its writer chose:
``random_read_iops_gain_vs_single_ssd``, ``added_latency_vs_one_drive``,
``seq_read_throughput_slowdown_with_read_ahead``, ``random_write_iops_gain_from_op``,
``drives_needed_to_double_random_read_iops``, ``latency_step_read_to_write``,
``seq_write_throughput_swr_vs_hwr``. :func:`parse_metric` folds each phrase to one word
(``read_ahead`` -> ``readahead``, ``compared_to`` -> ``vs``, ``slowdown`` -> a change
downwards), takes out the words that say what the figure is measured against (a single
drive, a setting switched on, another RAID level, the other controller, another
workload) and how (a ratio, a change up or down, the drive count that multiplies a
figure), and reads what is left as one measure: IOPS, latency or throughput, of a
workload, random or sequential, at block sizes. A word it does not know is named in the
reason it gives (:class:`NotExpressible`), never skipped.

Whether a change is a percentage, a factor or a difference is the claim's unit's to say
(:func:`settle`): "a gain of 175 percent", "2.75x" and "+21,000 IOPS" are one claim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

LEVEL_OF_CONFIG = -1  # "..._vs_raid5": the level compared with RAID 5 is the config's
WORKLOAD_WORDS = {"read": "read", "write": "write", "mixed": "mixed"}


class NotExpressible(Exception):
    """A claim raidlab cannot check; the message says what in its text is not understood."""


@dataclass(frozen=True)
class Measure:
    """What one run measures: ``iops`` (PTS, 2 jobs x QD 16), ``latency`` (QD 1, ms)
    or ``mbps`` (MB/s) of a workload at block sizes (one variant each); ``access``
    ``random`` or ``seq`` where the name says which ("" : the measure's own, random for
    IOPS and latency, sequential for throughput)."""

    kind: str
    workloads: tuple[str, ...]
    block_sizes: tuple[str, ...]
    access: str = ""


@dataclass(frozen=True)
class Relation:
    """How the claimed figure is made of measures.

    ``kind``: ``value`` (the measure itself), ``ratio`` (measured / baseline),
    ``inverse`` (baseline / measured: a slowdown as a factor), ``percent_of`` (100 x
    ratio), ``gain`` / ``penalty`` (100 x (ratio - 1) and 100 x (1 - ratio)),
    ``difference`` / ``decrease`` (measured - baseline and baseline - measured, in the
    measure's unit), ``capacity`` (the geometry's usable fraction) or ``count`` (the
    fewest drives whose figure is ``factor`` times one drive's). ``against``: ``single``
    drive, a ``modifier`` switched off, the second ``level``, the other ``controller``
    (``first`` the measured one, SWR or HWR) or another ``workload`` (``first`` the
    baseline workload)."""

    kind: str
    against: str = ""
    modifier: str = ""
    first: str = ""
    factor: float = 1.0
    # The one controller variant (SWR or HWR) the name is about ("latency_added_by_hwr").
    variant: str = ""
    # The baseline is not named (a change against the single drive by default, or the
    # setting the claim's config or condition switches on: claim_text decides).
    implied: bool = False
    # The baseline is the same level with this many drives ("..._vs_three_ssds", a
    # drive-count claim against a smaller array: "double the IOPS of three SSDs"); 0:
    # as ``against`` says.
    baseline_drives: int = 0
    # The setting switched off is the measured figure and on the baseline
    # ("..._without_read_ahead"); otherwise on is measured against off.
    off_measured: bool = False
    # The drive count the name states of the measured array ("raid5_3x_..."; 0: none).
    named_drives: int = 0


# Phrases folded to one word before a name is read, longest first where they overlap.
PHRASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("with", "vs", "without"), "onoff"),
    (("on", "vs", "off"), "onoff"),
    (("vs", "without"), "onoff"),
    (("read", "ahead"), "readahead"),
    (("write", "back"), "writeback"),
    (("write", "cache"), "writeback"),
    (("write", "through"), "writethrough"),
    (("over", "provisioning"), "op"),
    (("spare", "area"), "op"),
    (("response", "time"), "latency"),
    (("transfer", "rate"), "mbps"),
    (("mb", "s"), "mbps"),
    (("gb", "s"), "mbps"),
    (("relative", "to"), "vs"),
    (("compared", "to"), "vs"),
    (("compared", "with"), "vs"),
    (("due", "to"), "with"),
    (("drive", "count"), "drives"),
    (("ssd", "count"), "drives"),
    (("disk", "count"), "drives"),
    (("number", "of", "drives"), "drives"),
    (("number", "of", "ssds"), "drives"),
    (("per", "workload"), "each"),
    (("between", "workloads"), "successive"),
    (("from", "workload", "to", "workload"), "successive"),
    (("workload", "to", "workload"), "successive"),
    (("a", "single", "ssd"), "single"),
    (("a", "single", "drive"), "single"),
)
SINGLE_WORDS = ("single", "one")
DEVICE_WORDS = ("ssd", "drive", "disk", "hdd", "device")
# One word for each, by what it says.
WORDS: dict[str, str] = {
    **dict.fromkeys(("vs", "versus", "against", "than", "over"), "vs"),
    **dict.fromkeys(("with", "from", "by", "using"), "with"),
    # "slowdown_without_read_ahead": the setting off measured against it on.
    **dict.fromkeys(("without", "sans"), "without"),
    **dict.fromkeys(("readahead", "ra"), "mod:read_ahead"),
    **dict.fromkeys(("writeback", "wb"), "mod:write_back"),
    **dict.fromkeys(("op", "overprovisioning", "overprovisioned"), "mod:op_percent"),
    **dict.fromkeys(
        ("penalty", "reduction", "loss", "drop", "decrease", "slowdown", "degradation"),
        "down",
    ),
    **dict.fromkeys(("hit", "lower", "slower", "lost", "fewer", "less"), "down"),
    **dict.fromkeys(
        ("gain", "increase", "improvement", "speedup", "boost", "rise", "uplift"), "up"
    ),
    **dict.fromkeys(("added", "additional", "extra", "overhead", "step", "higher"), "up"),
    **dict.fromkeys(("faster", "more", "increment", "advantage", "lead", "benefit"), "up"),
    **dict.fromkeys(("behind", "deficit", "shortfall", "worse"), "down"),
    "minus": "diff",
    **dict.fromkeys(("difference", "delta", "diff"), "diff"),
    **dict.fromkeys(("ratio", "factor", "multiple", "scaling"), "ratio"),
    **dict.fromkeys(("double", "doubles", "doubling", "twice"), "times:2"),
    **dict.fromkeys(("triple", "triples", "tripling", "thrice"), "times:3"),
    **dict.fromkeys(("drives", "ssds", "disks", "hdds", "members"), "drives"),
    **dict.fromkeys(("swr", "md", "mdadm", "software"), "ctl:SWR"),
    **dict.fromkeys(("hwr", "hardware", "megaraid"), "ctl:HWR"),
    **dict.fromkeys(("iops", "kiops"), "kind:iops"),
    **dict.fromkeys(("latency", "lat"), "kind:latency"),
    **dict.fromkeys(
        ("throughput", "mbps", "bandwidth", "bw", "mibps", "gbps", "speed"), "kind:mbps"
    ),
    # "performance": the figure the access is measured in (sequential MB/s, else IOPS).
    **dict.fromkeys(("performance", "perf"), "kind:auto"),
    **dict.fromkeys(("read", "reads", "reading"), "wl:read"),
    **dict.fromkeys(("write", "writes", "writing"), "wl:write"),
    **dict.fromkeys(("mixed", "mix", "rw", "randrw", "readwrite"), "wl:mixed"),
    **dict.fromkeys(("random", "rand"), "access:random"),
    **dict.fromkeys(("seq", "sequential", "streaming"), "access:seq"),
    **dict.fromkeys(("each", "all", "every", "workloads"), "each"),
    **dict.fromkeys(("successive", "consecutive"), "successive"),
    # Words that say nothing a run needs.
    **dict.fromkeys(
        ("avg", "mean", "average", "the", "of", "a", "an", "io", "ios", "figure", "value"),
        "",
    ),
    **dict.fromkeys(("needed", "required", "to", "for", "at", "in", "when", "on"), ""),
    # Units in a name ("latency_ms"): the unit column says which.
    **dict.fromkeys(("ms", "us", "usec", "msec", "pct", "percent", "x"), ""),
    **dict.fromkeys(("and", "total", "array", "raid", "measured", "three", "both"), ""),
    # "on a par with": a ratio (its value says "on a par").
    "par": "ratio",
}
# Drive counts a baseline may name ("vs_three_ssds", "over_3_drives").
NUMBER_WORDS = {
    **{str(n): n for n in range(2, 33)},
    **{
        word: n
        for n, word in enumerate(("two", "three", "four", "five", "six", "seven", "eight"), 2)
    },
}
BLOCK_WORD = re.compile(r"^\d+(?:k|kb|kib|m|mb|mib)$")
LEVEL_WORD = re.compile(r"^raid(\d+)$")
STEP = re.compile(
    r"(?:^|_)(?:from_)?(?P<w1>read|write|mixed)s?_to_(?P<w2>read|write|mixed)s?(?=_|$)"
)


def _fold(name: str) -> list[str]:
    """The name's words with every phrase of PHRASES folded to its one word, and "one
    SSD", "a single drive" to ``single``."""
    words = [word for word in name.split("_") if word]
    folded: list[str] = []
    at = 0
    while at < len(words):
        for phrase, word in PHRASES:
            if tuple(words[at : at + len(phrase)]) == phrase:
                folded.append(word)
                at += len(phrase)
                break
        else:
            word = words[at]
            if word in SINGLE_WORDS and at + 1 < len(words) and words[at + 1] in DEVICE_WORDS:
                folded.append("single")
                at += 2
                continue
            folded.append("single" if word == "single" else word)
            at += 1
    return folded


@dataclass
class _Reading:
    """What the words of a name have said so far."""

    metric: str
    change: str = ""  # "up", "down", "diff" or "ratio"
    against: str = ""
    modifier: str = ""
    levels: tuple[int, ...] = ()
    controllers: tuple[str, ...] = ()
    step: tuple[str, str] | None = None
    times: float = 0.0
    counts_drives: bool = False
    each: bool = False
    kinds: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    access: str = ""
    block_sizes: tuple[str, ...] = ()
    baseline_drives: int = 0
    off_measured: bool = False
    named_drives: int = 0


def _read_word(reading: _Reading, words: list[str], at: int) -> int:
    """Reads the word at ``at`` into ``reading``; the index of the next word to read."""
    word = words[at]
    level = LEVEL_WORD.match(word)
    if level:
        reading.levels += (int(level.group(1)),)
        return at + 1
    if BLOCK_WORD.match(word):
        reading.block_sizes += (word,)
        return at + 1
    if word == "single":
        reading.against = reading.against or "single"
        return at + 1
    meaning = WORDS.get(word)
    if meaning is None:
        raise NotExpressible(
            f"metric '{reading.metric}': '{word}' is not a word raidlab reads in a metric "
            "(it reads IOPS, latency and throughput of reads, writes or a mix, random or "
            "sequential, at block sizes; compared with a single drive, a setting switched "
            "off (read-ahead, write-back, over-provisioning), another RAID level, the other "
            "controller (SWR, HWR) or another workload, as a ratio, a gain, a penalty or a "
            "difference; the drives that double a figure; usable capacity)"
        )
    if meaning == "without":
        reading.off_measured = True
        meaning = "with"
    if meaning == "with":
        following = words[at + 1] if at + 1 < len(words) else ""
        named = WORDS.get(following, "")
        if following and following != "single" and not named.startswith(("mod:", "ctl:")):
            raise NotExpressible(
                f"metric '{reading.metric}': '{following}' is not a setting raidlab can "
                "switch (read-ahead, write-back, over-provisioning)"
            )
        return at + 1
    _apply(reading, meaning)
    return at + 1


def _apply(reading: _Reading, meaning: str) -> None:
    what, _, value = meaning.partition(":")
    if what in ("up", "down", "diff", "ratio"):
        # "ratio" is the weakest word: "gain ratio" is a gain.
        if not reading.change or reading.change == "ratio":
            reading.change = what
    elif what == "mod":
        reading.modifier = value
    elif what == "onoff":
        reading.against = "modifier"
        reading.change = reading.change or "ratio"
    elif what == "times":
        reading.times = float(value)
    elif what == "drives":
        reading.counts_drives = True
    elif what == "ctl":
        reading.controllers += (value,)
    elif what == "kind":
        reading.kinds += (value,)
    elif what == "wl":
        reading.workloads += (value,)
    elif what == "access":
        reading.access = value
    elif what == "each":
        reading.each = True
    elif what == "successive":
        reading.step = ("previous", "")


# A percentage of over-provisioning in a name ("gain_with_20_percent_overprovisioning",
# "op_20pct"): claim_text reads it as the condition's "20% overprovisioning".
OP_IN_NAME = re.compile(
    r"(?:^|_)(?P<n1>\d+(?:\.\d+)?)_?(?:percent|pct)_(?=(?:over_?provisioning|op)(?:_|$))"
    r"|(?:(?<=op_)|(?<=ning_))(?P<n2>\d+(?:\.\d+)?)_?(?:percent|pct)(?=_|$)"
)


def op_percent_in_name(metric: str) -> float | None:
    """The over-provisioning percentage a metric name states, if any."""
    name = re.sub(r"[^a-z0-9_.]+", "_", metric.strip().lower())
    found = OP_IN_NAME.search(name)
    return float(found.group("n1") or found.group("n2")) if found else None


COUNT_X = re.compile(r"^(\d+)x$")
COUNT_DEVICES = ("ssd", "ssds", "drive", "drives", "disk", "disks")


def _baseline_count(words: list[str], anywhere: bool = False) -> tuple[int, list[str]] | None:
    """A drive count in ``words`` ("three ssds", "3 ssd", "3x"; at their start, or
    anywhere) and the words without it and a level named beside it (the count's
    level is the config's)."""
    for at, word in enumerate(words):
        if not anywhere and at > 1:
            return None
        count_x = COUNT_X.match(word)
        if count_x:
            count, span = int(count_x.group(1)), 1
        elif word in NUMBER_WORDS and at + 1 < len(words) and words[at + 1] in COUNT_DEVICES:
            count, span = NUMBER_WORDS[word], 2
        else:
            continue
        rest = words[:at] + words[at + span :]
        near = [i for i in (at - 1, at) if 0 <= i < len(rest) and LEVEL_WORD.match(rest[i])]
        if near:
            rest = rest[: near[0]] + rest[near[0] + 1 :]
        return count, rest
    return None


def _read_name(metric: str) -> _Reading:
    name = re.sub(r"_(min|max)$", "", metric.strip().lower())
    name = re.sub(r"[^a-z0-9_.]+", "_", name)
    name = OP_IN_NAME.sub("_", name).strip("_")
    name = re.sub(r"[^a-z0-9_]+", "_", name)
    reading = _Reading(metric)
    step = STEP.search(name)
    if step:
        reading.step = (step.group("w1"), step.group("w2"))
        name = (name[: step.start()] + "_" + name[step.end() :]).strip("_")
    words = _fold(name)
    compare = [at for at, word in enumerate(words) if WORDS.get(word) == "vs" or word == "minus"]
    if compare:
        # What follows "vs" ("over", "minus") is the baseline: a level, a controller,
        # a single drive, or the level's array of some drives.
        after = words[compare[0] + 1 :]
        counted = _baseline_count(after) if reading.step is None else None
        if counted is not None:
            # "vs three SSDs", "vs raid5 3x": the level's array of that many drives is
            # the baseline; the count's words are read here, not as the drive-count
            # figure.
            reading.baseline_drives, rest = counted
            words = words[: compare[0]] + rest
        elif after and LEVEL_WORD.match(after[0]):
            reading.against = "level"
        elif after and WORDS.get(after[0], "").startswith("ctl:"):
            reading.against = "controller"
    elif reading.step is None and (counted := _baseline_count(words, anywhere=True)):
        if any(WORDS.get(word, "").startswith("times:") for word in words):
            # "ssds_for_double_write_iops_of_3_ssd_raid5": a count of drives named with
            # a number is the baseline array wherever it stands.
            reading.baseline_drives, words = counted
        else:
            # "raid5_3x_random_write_iops": the config's drive count, named again
            # (claim_text holds it to the config's).
            reading.named_drives, words = counted
    at = 0
    while at < len(words):
        at = _read_word(reading, words, at)
    return reading


def parse_metric(
    metric: str, workloads_of_condition: tuple[str, ...] | None = None, unit: str = ""
) -> tuple[Measure | None, Relation, tuple[int, ...]]:
    """The measure and relation a metric name states, and the levels it compares.
    ``workloads_of_condition``: the workloads the claim's condition names, for a name
    that names none (None: the name must)."""
    capacity = r"(?:usable_|net_)?capacity(?:_(?:fraction|share|percent|ratio|efficiency))?"
    if re.fullmatch(rf"{capacity}(?:_(?:min|max))?", metric.lower()):
        return None, Relation("capacity"), ()
    reading = _read_name(metric)
    relation = _relation(reading)
    if reading.named_drives:
        relation = replace(relation, named_drives=reading.named_drives)
    levels: tuple[int, ...] = ()
    if relation.against == "level":
        if len(reading.levels) not in (1, 2):
            raise NotExpressible(f"metric '{metric}' compares RAID levels it does not name")
        levels = (
            reading.levels if len(reading.levels) == 2 else (LEVEL_OF_CONFIG, reading.levels[0])
        )
    elif len(set(reading.levels)) > 1:
        raise NotExpressible(
            f"metric '{metric}' names RAID {reading.levels[0]} and RAID {reading.levels[1]} "
            "and compares neither"
        )
    elif reading.levels:
        # "raid5_random_write_iops": the config's level, named again (claim_text holds
        # it to the config's).
        levels = (reading.levels[0],)
    return _measure(reading, relation, workloads_of_condition, unit), relation, levels


def _relation(reading: _Reading) -> Relation:
    """The relation the words say; a change with no baseline named is against the
    setting the name switches, else against a single drive. A controller named
    outside a comparison of the two ("latency_added_by_hwr") picks that variant."""
    metric = reading.metric
    if reading.against == "controller":
        if len(set(reading.controllers)) != 2:
            raise NotExpressible(f"metric '{metric}' compares controllers it does not name both of")
        kind = _kind(reading.change or "ratio")
        return Relation(kind, "controller", first=reading.controllers[0])
    if len(set(reading.controllers)) > 1:
        if reading.change in ("ratio", "diff"):
            # "swr_hwr_ratio", "hwr_swr_difference": the first named against the other.
            kind = _kind(reading.change)
            return Relation(kind, "controller", first=reading.controllers[0])
        raise NotExpressible(f"metric '{metric}' names both controllers and compares neither")
    variant = reading.controllers[0] if reading.controllers else ""
    if reading.times and not reading.counts_drives and not reading.baseline_drives:
        # "random_read_iops_more_than_double_single_ssd": the factor is the claim's
        # value; the name says a ratio.
        reading.change = "ratio"
        reading.times = 0.0
    if reading.times or reading.counts_drives:
        if not (reading.times and reading.counts_drives):
            raise NotExpressible(
                f"metric '{metric}': a drive count is read as the drives that double or "
                "triple a figure ('drives_to_double_random_read_iops')"
            )
        if reading.baseline_drives:
            return Relation(
                "count",
                "drives",
                factor=reading.times,
                variant=variant,
                baseline_drives=reading.baseline_drives,
            )
        return Relation("count", "single", factor=reading.times, variant=variant)
    if reading.baseline_drives:
        if reading.modifier or reading.step is not None:
            raise NotExpressible(f"metric '{metric}' compares drive counts and something else")
        kind = _kind(reading.change or "ratio")
        return Relation(kind, "drives", variant=variant, baseline_drives=reading.baseline_drives)
    if reading.step is not None:
        if reading.against or reading.modifier:
            raise NotExpressible(f"metric '{metric}' compares workloads and something else")
        kind = _kind(reading.change or "diff")
        return Relation(kind, "workload", first=reading.step[0], variant=variant)
    relation = replace(_relation_of_one(reading, reading.against), variant=variant)
    if reading.off_measured:
        if relation.against != "modifier":
            raise NotExpressible(f"metric '{metric}' names no setting to go without")
        relation = replace(relation, off_measured=True)
    return relation


def _relation_of_one(reading: _Reading, against: str) -> Relation:
    """The relation of a name about one controller's figures."""
    metric = reading.metric
    if reading.modifier and against in ("", "modifier"):
        kind = _kind(reading.change) if reading.change else "value"
        return Relation(kind, "modifier", reading.modifier)
    if against == "modifier":
        raise NotExpressible(f"metric '{metric}' switches no setting raidlab knows on and off")
    if reading.modifier:
        raise NotExpressible(
            f"metric '{metric}' compares with a {against} and switches {reading.modifier}; "
            "raidlab reads one comparison per claim"
        )
    if against:
        return Relation(_kind(reading.change or "ratio"), against)
    if reading.change:
        # "added_latency", "random_write_iops_penalty": the article's changes are
        # against one SSD where nothing else is named.
        return Relation(_kind(reading.change), "single", implied=True)
    return Relation("value")


def _kind(change: str) -> str:
    """A change word's relation before the unit settles it (:func:`settle`)."""
    return {"up": "gain", "down": "penalty", "diff": "difference", "ratio": "ratio"}[change]


# The quantity a claim's unit states, for a name that names none ("random_read" in
# IOPS).
KIND_OF_UNIT = {
    **dict.fromkeys(("IOPS", "KIOPS"), "iops"),
    **dict.fromkeys(("MS", "US", "USEC", "MSEC"), "latency"),
    **dict.fromkeys(("MBPS", "MB/S", "GBPS", "GB/S", "MIB/S", "GIB/S"), "mbps"),
}


def _measure(
    reading: _Reading,
    relation: Relation,
    workloads_of_condition: tuple[str, ...] | None,
    unit: str = "",
) -> Measure:
    metric = reading.metric
    auto = "mbps" if reading.access == "seq" else "iops"
    if not reading.kinds:
        # No quantity named: the unit's, else, for a change or comparison of a random
        # or sequential workload ("read_ahead_random_read_slowdown"), the access's
        # figure, as "performance" reads.
        named = KIND_OF_UNIT.get(unit.strip().upper())
        if named:
            reading.kinds = (named,)
        elif relation.kind not in ("value", "count") and (reading.access or reading.workloads):
            reading.kinds = ("auto",)
    kinds = tuple(dict.fromkeys(auto if kind == "auto" else kind for kind in reading.kinds))
    if len(kinds) != 1:
        raise NotExpressible(
            f"metric '{metric}' is not one raidlab can simulate: it names "
            f"{'no quantity' if not kinds else ' and '.join(kinds)}; raidlab reads one of "
            "IOPS, latency or throughput (MB/s) per claim"
        )
    (kind,) = kinds
    workloads = tuple(dict.fromkeys(reading.workloads))
    if reading.step == ("previous", ""):
        # Each step from one workload to the next, in the SNIA latency test's order.
        workloads = ("mixed", "write")
    elif reading.step is not None:
        if workloads:
            raise NotExpressible(f"metric '{metric}' names workloads besides its step")
        workloads = (reading.step[1],)
    elif len(workloads) > 1:
        # "mixed_and_write_iops": the one figure stated of each ("mixed workloads and
        # write-only operations ... approximately 4,000 IOPS"), one check per workload.
        pass
    elif not workloads and reading.each and workloads_of_condition is None:
        workloads = ("read", "mixed", "write")
    elif not workloads and workloads_of_condition is None and kind == "latency":
        # A latency of no workload named: the SNIA PTS latency test's three.
        workloads = ("read", "mixed", "write")
    elif not workloads:
        if workloads_of_condition is None:
            raise NotExpressible(
                f"metric '{metric}' names no workload (read, write or mixed) and neither "
                "does its condition"
            )
        workloads = workloads_of_condition
    if kind == "mbps" and "mixed" in workloads and reading.access != "random":
        raise NotExpressible(f"metric '{metric}': sequential throughput is of reads or writes")
    return Measure(kind, workloads, tuple(dict.fromkeys(reading.block_sizes)), reading.access)


# The classes of unit a figure is stated in: a percentage, a factor, or the measure's
# own unit (IOPS, ms, MB/s), and a count of drives.
PERCENT_UNITS = ("PERCENT", "%", "PP", "PCT")
FACTOR_UNITS = ("X", "TIMES", "FACTOR")
COUNT_UNITS = ("DRIVES", "SSDS", "DISKS", "HDDS", "COUNT", "DRIVE", "SSD", "DISK", "")


def settle(relation: Relation, unit_class: str) -> Relation:
    """The relation as the claim's unit states it: a change is a percentage
    (``gain`` / ``penalty``), a factor (``ratio`` / ``inverse``) or, in the measure's
    unit, a ``difference`` / ``decrease``; a ratio in percent is ``percent_of``."""
    table = {
        "gain": {"percent": "gain", "x": "ratio", "measure": "difference"},
        "penalty": {"percent": "penalty", "x": "inverse", "measure": "decrease"},
        "difference": {"percent": "gain", "x": "ratio", "measure": "difference"},
        "ratio": {"percent": "percent_of", "x": "ratio", "measure": "difference"},
    }
    if relation.kind not in table or unit_class not in table[relation.kind]:
        return relation
    return replace(relation, kind=table[relation.kind][unit_class])
