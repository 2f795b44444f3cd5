"""Byte sizes as people write them: ``512``, ``4K``, ``16k``, ``1M``, ``0.5K``, ``32GiB``.

One grammar for every front end, parsed in Rust (``raidlab_layout::units``, which the
engine's flags use too; shared vectors in ``tests/data/sizes.tsv``): suffixes K, M, G,
T, P are powers of 1024 (as ATTO, fio and the studies use them), case-insensitive,
optionally followed by ``B`` or ``iB``. A size must come out as a whole number of
bytes. Ranges ``512..32M`` double from the first size while it is <= the last one
(ATTO's transfer-size sweep); comma lists combine sizes and ranges.
"""

from __future__ import annotations

import re

from raidlab.errors import RaidlabError

_MULTIPLIERS: dict[str, int] = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}

# A sweep longer than this is almost certainly a typo (e.g. `1..1T` of counts).
SWEEP_POINTS_MAX = 64


def parse_size(text: str | int, field: str = "size") -> int:
    """Bytes in ``text`` (``"4K"`` -> 4096). Raises RaidlabError naming ``field``."""
    if isinstance(text, bool):
        raise RaidlabError(field, f"expected a size such as 4K, got {text!r}")
    if isinstance(text, int):
        return text
    # Imported here: the command line starts without the native module.
    from raidlab import _native

    try:
        return int(_native.parse_size(str(text)))
    except _native.SizeError as error:
        raise RaidlabError(field, str(error.message)) from None


def parse_sizes(text: str, field: str = "sizes") -> list[int]:
    """Sizes in a comma list whose items are sizes or doubling ranges ``a..b``.

    ``"512..4K"`` -> ``[512, 1024, 2048, 4096]``; ``"4K,64K"`` -> ``[4096, 65536]``.
    The result is sorted and without duplicates.
    """
    sizes: set[int] = set()
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            raise RaidlabError(field, f"empty item in size list {text!r}")
        if ".." in item:
            first_text, _, last_text = item.partition("..")
            first = parse_size(first_text, field)
            last = parse_size(last_text, field)
            if first <= 0:
                raise RaidlabError(field, f"range must start above 0 B, got {item!r}")
            if last < first:
                raise RaidlabError(field, f"range end is below its start in {item!r}")
            size = first
            while size <= last:
                sizes.add(size)
                size *= 2
        else:
            sizes.add(parse_size(item, field))
        if len(sizes) > SWEEP_POINTS_MAX:
            raise RaidlabError(field, f"at most {SWEEP_POINTS_MAX} sizes, got more in {text!r}")
    return sorted(sizes)


def format_size(size_bytes: int) -> str:
    """Shortest exact spelling: ``512``, ``4K``, ``1M``, ``1536`` (not a whole K)."""
    for suffix in ("T", "G", "M", "K"):
        multiplier = _MULTIPLIERS[suffix.lower()]
        if size_bytes >= multiplier and size_bytes % multiplier == 0:
            return f"{size_bytes // multiplier}{suffix}"
    return str(size_bytes)


def format_size_kib(size_bytes: int) -> str:
    """ATTO's axis labels: ``0.5K``, ``1K``, ... ``1M``, ``32M``."""
    if size_bytes < 1024 and size_bytes % 512 == 0:
        return f"{size_bytes / 1024:g}K"
    return format_size(size_bytes)


_DURATION_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PATTERN = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|ms|s|m|h)?\s*$", re.IGNORECASE)


def parse_duration_ns(text: str | int | float, field: str = "runtime") -> int:
    """``"10s"``, ``"500ms"``, ``"2m"``, ``"1h"``, ``"250us"`` or a bare number of
    seconds (fio's ``runtime`` unit) as integer nanoseconds, at least 1 ns."""
    match = _DURATION_PATTERN.match(str(text))
    if match is None:
        raise RaidlabError(field, f"must be a duration like 10s, 500ms, 2m or 250us, got {text!r}")
    value_ns = round(float(match.group(1)) * _DURATION_NS[(match.group(2) or "").lower()])
    if value_ns < 1:
        raise RaidlabError(field, f"must be at least 1 ns, got {text!r}")
    return value_ns
