"""DiskSim 4's disk library: its parameter files (``.parv``, the ``.diskspecs``,
``.model`` and ``.seek`` files they source) read into a raidlab drive file, and its
"validate" traces (requests measured one at a time on a real disk).

The parameter syntax is DiskSim 4's (``disksim_loadparams.c`` / libparam): blocks
``TYPE NAME { key = value, ... }`` whose values are numbers, words, lists ``[ ... ]``,
nested blocks ``TYPE { ... }`` or ``source FILE`` (a block read from another file);
top-level ``source FILE`` lines include a file; ``instantiate [ names ] as TYPE`` and
``topology ...`` place the components; ``#`` starts a comment. Every value keeps the
file and line it came from, so the drive file cites each key's origin.

What raidlab's drive model cannot represent (sparing, slipped and defective sectors,
DiskSim's bus protocol and scheduler settings, ...) is listed in the drive file and
returned as warnings, never dropped in silence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError, read_user_text

SECTOR_BYTES = 512
# The cylinder a drive's average seek is quoted at (a third of the stroke), as the
# datasheet model's seek curve takes it (crates/raidlab-sim/src/drive/hdd.rs).
AVERAGE_SEEK_STROKE_FRACTION = 1 / 3


@dataclass(frozen=True)
class Value:
    """One parsed value and where it was written."""

    value: Any  # str (a number or a word), list[Value], or Block
    file: str
    line: int

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Block:
    """``TYPE NAME { ... }`` (a nested block has no name)."""

    type: str
    name: str
    file: str
    line: int
    keys: dict[str, Value] = field(default_factory=dict)


@dataclass
class ParamFile:
    """A parsed parameter file: its blocks by name and what it instantiates."""

    blocks: dict[str, Block] = field(default_factory=dict)
    instances: list[tuple[list[str], str, str]] = field(default_factory=list)


class _Reader:
    """A recursive-descent reader of one file's text (``source`` opens others)."""

    def __init__(self, path: Path, label: str, depth: int = 0) -> None:
        if depth > 8:
            raise RaidlabError(label, f"{path.name}: `source` nested more than 8 deep")
        self.path = path
        self.label = label
        self.depth = depth
        text = read_user_text(path, label)
        # Comments run to the end of the line; the newline stays for line numbers.
        self.text = re.sub(r"#[^\n]*", "", text)
        self.pos = 0

    def line(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def fail(self, message: str) -> RaidlabError:
        return RaidlabError(self.label, f"{self.path.name}:{self.line()}: {message}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = self.peek() or "end of file"
            raise self.fail(f"expected {char!r}, found {found!r}")
        self.pos += 1

    def word(self) -> str:
        self.skip_space()
        match = re.compile(r"[^\s{}\[\],=]+").match(self.text, self.pos)
        if not match:
            raise self.fail(f"expected a name, found {self.peek() or 'end of file'!r}")
        self.pos = match.end()
        return match.group()

    def sourced(self, name: str) -> _Reader:
        path = self.path.parent / name
        if not path.is_file():
            raise self.fail(f"source {name}: no such file next to {self.path.name}")
        return _Reader(path, self.label, self.depth + 1)

    # --- top level ---------------------------------------------------------------

    def top_level(self, into: ParamFile) -> ParamFile:
        while self.peek():
            line = self.line()
            head = self.word()
            if head == "source":
                self.sourced(self.word()).top_level(into)
            elif head == "instantiate":
                names = self.name_list()
                if self.word() != "as":
                    raise self.fail("expected `as` after `instantiate [ ... ]`")
                into.instances.append((names, self.word(), f"{self.path.name}:{line}"))
            elif head == "topology":
                self.word()  # the root component's type
                self.word()  # its name
                self.skip_brackets()
            else:
                name = self.word()
                if self.peek() != "{":
                    raise self.fail(f"expected a block `{head} {name} {{ ... }}`")
                into.blocks[name] = self.block(head, name, line)
        return into

    def name_list(self) -> list[str]:
        self.expect("[")
        names = []
        while self.peek() != "]":
            if not self.peek():
                raise self.fail("unterminated list")
            names.append(self.word())
            if self.peek() == ",":
                self.pos += 1
        self.pos += 1
        return names

    def skip_brackets(self) -> None:
        self.expect("[")
        depth = 1
        while depth:
            if self.pos >= len(self.text):
                raise self.fail("unterminated `[`")
            depth += {"[": 1, "]": -1}.get(self.text[self.pos], 0)
            self.pos += 1

    # --- blocks and values ---------------------------------------------------------

    def block(self, type_: str, name: str, line: int) -> Block:
        block = Block(type_, name, self.path.name, line)
        self.expect("{")
        while self.peek() != "}":
            if not self.peek():
                raise self.fail(f"block {type_} {name} is not closed")
            key_line = self.line()
            key = self.key()
            block.keys[key] = self.value(key_line)
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "}":
                raise self.fail(f"expected ',' or '}}' after {key!r}")
        self.pos += 1
        return block

    def key(self) -> str:
        self.skip_space()
        end = self.text.find("=", self.pos)
        stop = min((i for i in (self.text.find(c, self.pos) for c in "{},") if i >= 0), default=-1)
        if end < 0 or (0 <= stop < end):
            raise self.fail("expected `key = value`")
        key = " ".join(self.text[self.pos : end].split())
        self.pos = end + 1
        if not key:
            raise self.fail("a key is missing before '='")
        return key

    def value(self, line: int) -> Value:
        here = self.peek()
        if here == "[":
            self.pos += 1
            items = []
            while self.peek() != "]":
                if not self.peek():
                    raise self.fail("unterminated list")
                items.append(self.value(self.line()))
                if self.peek() == ",":
                    self.pos += 1
            self.pos += 1
            return Value(items, self.path.name, line)
        first = self.word()
        if first == "source":
            name = self.word()
            sub = self.sourced(name).top_level(ParamFile())
            if len(sub.blocks) != 1:
                raise self.fail(f"{name}: expected one block, found {len(sub.blocks)}")
            return Value(next(iter(sub.blocks.values())), self.path.name, line)
        after_word = self.pos
        if self.peek() == "{":
            return Value(self.block(first, "", line), self.path.name, line)
        self.pos = after_word
        # A scalar: words up to the next separator on its line.
        rest = re.compile(r"[^{}\[\],=\n]*").match(self.text, self.pos)
        assert rest is not None
        self.pos = rest.end()
        return Value(" ".join((first + rest.group()).split()), self.path.name, line)


def read_parameters(path: str | Path, label: str = "FILE") -> ParamFile:
    """A DiskSim parameter file and the files it sources, parsed; a syntax error is a
    :class:`RaidlabError` naming ``label`` and the file and line."""
    path = Path(path)
    if not path.is_file():
        raise RaidlabError(label, f"no such file: {path}")
    return _Reader(path, label).top_level(ParamFile())


# --- the drive file -------------------------------------------------------------------


@dataclass
class DriveFile:
    """A drive file's ``name``, its keys (value, source comment) in order, and the
    DiskSim parameters raidlab does not represent."""

    name: str
    keys: list[tuple[str, Any, str]] = field(default_factory=list)
    unrepresented: list[str] = field(default_factory=list)

    def set(self, key: str, value: Any, source: str) -> None:
        self.keys.append((key, value, source))

    def toml(self, parv: Path) -> str:
        lines = [
            f"# A drive imported from DiskSim 4's {parv.name} by `raidlab presets import-disksim`.",
            '# Each key cites the DiskSim file and line it comes from ("derived": computed',
            "# from the values cited). DiskSim parameters raidlab does not represent:",
        ]
        lines += [f"#   - {entry}" for entry in self.unrepresented] or ["#   (none)"]
        lines += ["", f"[{self.name}]"]
        for key, value, source in self.keys:
            lines.append(f"{key} = {_toml_value(value)}  # {source}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _number(v: Value, label: str, key: str) -> float:
    try:
        return float(v.value)
    except (TypeError, ValueError):
        raise RaidlabError(
            label, f"{v.where()}: {key!r} must be a number, got {v.value!r}"
        ) from None


class _Keys:
    """A block's keys, taken one by one; those left at the end are unrepresented."""

    def __init__(self, block: Block, label: str) -> None:
        self.block = block
        self.label = label
        self.left = dict(block.keys)

    def take(self, key: str) -> Value:
        if key not in self.block.keys:
            raise RaidlabError(
                self.label,
                f"{self.block.file}:{self.block.line}: {self.block.type} {self.block.name} "
                f"has no {key!r} (not a DiskSim 4 disk?)",
            )
        self.left.pop(key, None)
        return self.block.keys[key]

    def number(self, key: str) -> tuple[float, str]:
        v = self.take(key)
        return _number(v, self.label, key), f'{v.where()} "{key} = {v.value}"'

    def rest(self) -> list[str]:
        out = []
        for key, v in self.left.items():
            shown = v.value if isinstance(v.value, str) else "(block or list)"
            out.append(f"{v.where()} {key} = {shown}")
        return out


def _ms_to_ns(ms: float) -> int:
    return round(ms * 1e6)


def import_parv(path: str | Path, label: str = "FILE") -> DriveFile:
    """The drive of a DiskSim 4 parameter file with one disk, as a raidlab drive file.
    An unreadable, malformed or unsupported file is a :class:`RaidlabError` naming
    ``label`` and the file and line."""
    params = read_parameters(path, label)
    disk = _the_disk(params, label)
    drive = DriveFile(name=f"disksim-{disk.name.lower()}")
    keys = _Keys(disk, label)
    model_value = keys.take("Model")
    if not isinstance(model_value.value, Block) or model_value.value.type != "dm_disk":
        raise RaidlabError(label, f"{model_value.where()}: Model must be a dm_disk block")
    model = _Keys(model_value.value, label)
    _geometry(drive, model, Path(path), label)
    _firmware(drive, keys, disk, label)
    drive.unrepresented += keys.rest() + model.rest()
    return drive


def _the_disk(params: ParamFile, label: str) -> Block:
    disks = []
    for names, type_name, where in params.instances:
        block = params.blocks.get(type_name)
        if block is None:
            raise RaidlabError(
                label, f"{where}: instantiates {type_name!r}, which no block defines"
            )
        if block.type == "disksim_disk":
            disks += [block] * len(names)
    if len(disks) != 1:
        raise RaidlabError(
            label, f"expected one instantiated disksim_disk, found {len(disks)} (import one disk)"
        )
    return disks[0]


def _geometry(drive: DriveFile, model: _Keys, parv: Path, label: str) -> None:
    """Capacity, surfaces, zone table and mechanics from the ``dm_disk`` block."""
    where = f"{model.block.file}:{model.block.line}"
    drive.set("kind", "hdd", f"{where} dm_disk {model.block.name}: a rotating disk")
    drive.set("description", f"{model.block.name} from DiskSim 4's {parv.name}", where)
    blocks, src = model.number("Block count")
    drive.set("capacity_bytes", int(blocks) * SECTOR_BYTES, src + " x 512 B")
    surfaces, src = model.number("Number of data surfaces")
    drive.set("surfaces", int(surfaces), src)
    cylinders, cylinders_src = model.number("Number of cylinders")
    layout = _Keys(_block(model.take("Layout Model"), "dm_layout_g1", label), label)
    zones = _zones(drive, layout, label)
    drive.unrepresented += layout.rest()
    mech = _Keys(_block(model.take("Mechanical Model"), "dm_mech_g1", label), label)
    rpm, rpm_src = mech.number("Rotation speed (in rpms)")
    drive.set("rpm", round(rpm), rpm_src)
    spt = [z[2] for z in zones]
    for key, sectors in (("outer", spt[0]), ("inner", spt[-1])):
        rate = sectors * SECTOR_BYTES * rpm / 60
        drive.set(
            f"media_rate_bytes_per_s_{key}",
            round(rate),
            f"derived: {sectors} blocks per track x 512 B x {rpm:g} rpm / 60 "
            f"({key} zone of the zone table)",
        )
    drive.set("zones", len(zones), "derived: the zone table's zones")
    _seek(drive, mech, parv, int(cylinders), cylinders_src, label)
    head_switch, src = mech.number("Head switch time")
    drive.set("head_switch_ns", _ms_to_ns(head_switch), src)
    settle, src = mech.number("Add. write settling delay")
    drive.set("write_settle_ns", _ms_to_ns(settle), src)
    for key in ("Access time type", "Seek type", "Percent error in rpms"):
        if key in mech.block.keys:
            v = mech.take(key)
            expected = {"Access time type": "trackSwitchPlusRotation", "Seek type": "extracted"}
            if key in expected and v.value != expected[key]:
                raise RaidlabError(
                    label,
                    f"{v.where()}: {key} {v.value!r} is not supported "
                    f"(raidlab models {expected[key]!r})",
                )
            if key == "Percent error in rpms" and _number(v, label, key) != 0:
                drive.unrepresented.append(f"{v.where()} {key} = {v.value}")
    drive.unrepresented += mech.rest()


def _block(v: Value, type_: str, label: str) -> Block:
    if not isinstance(v.value, Block) or v.value.type != type_:
        raise RaidlabError(label, f"{v.where()}: expected a {type_} block")
    return v.value


ZONE_KEYS = {
    "First cylinder number": "zone_first_cylinder",
    "Last cylinder number": "zone_last_cylinder",
    "Blocks per track": "zone_sectors_per_track",
    "Skew for track switch": "zone_track_skew_sectors",
    "Skew for cylinder switch": "zone_cylinder_skew_sectors",
}


def _zones(drive: DriveFile, layout: _Keys, label: str) -> list[tuple[int, ...]]:
    """The zone table: five lists, one entry per zone."""
    zones_value = layout.take("Zones")
    if not isinstance(zones_value.value, list) or not zones_value.value:
        raise RaidlabError(label, f"{zones_value.where()}: Zones must be a list of zones")
    rows = []
    for item in zones_value.value:
        zone = _Keys(_block(item, "dm_layout_g1_zone", label), label)
        rows.append(tuple(round(zone.number(key)[0]) for key in ZONE_KEYS))
        for key, v in zone.left.items():
            shown = v.value if isinstance(v.value, str) else f"{len(v.value)} entries"
            if shown not in ("0", "0.000000", "0 entries"):
                drive.unrepresented.append(f"{v.where()} zone {key} = {shown}")
    for i, key in enumerate(ZONE_KEYS.values()):
        drive.set(
            key,
            [row[i] for row in rows],
            f"{zones_value.where()} Zones: {list(ZONE_KEYS)[i]!r} of each zone",
        )
    return rows


def _seek(
    drive: DriveFile, mech: _Keys, parv: Path, cylinders: int, cylinders_src: str, label: str
) -> None:
    """The measured seek curve (the ``.seek`` file) and the three datasheet figures
    raidlab's drive file requires besides it."""
    t2t, t2t_src = mech.number("Single cylinder seek time")
    full, full_src = mech.number("Full strobe seek time")
    curve = mech.take("Full seek curve")
    path = parv.parent / str(curve.value)
    distances, times = read_seek_file(path, label)
    drive.set("seek_ns_track_to_track", _ms_to_ns(t2t), t2t_src)
    third = max(1, round(cylinders * AVERAGE_SEEK_STROKE_FRACTION))
    avg = _interpolate(distances, times, third)
    drive.set(
        "seek_ns_avg",
        max(_ms_to_ns(avg), _ms_to_ns(t2t)),
        f"derived: {path.name} at a third of the stroke ({third} of {cylinders} cylinders, "
        f"{cylinders_src})",
    )
    drive.set("seek_ns_full_stroke", max(_ms_to_ns(full), _ms_to_ns(avg)), full_src)
    drive.set("seek_table_cylinders", distances, f"{path.name}: distances (cylinders)")
    drive.set("seek_table_ns", [_ms_to_ns(t) for t in times], f"{path.name}: seek times")


def read_seek_file(path: Path, label: str) -> tuple[list[int], list[float]]:
    """A DiskSim ``.seek`` file: ``Seek distances measured: N`` then ``distance, ms``."""
    lines = read_user_text(path, label).splitlines()
    match = re.match(r"\s*Seek distances measured:\s*(\d+)", lines[0] if lines else "")
    if not match:
        raise RaidlabError(label, f"{path.name}:1: expected 'Seek distances measured: N'")
    distances: list[int] = []
    times: list[float] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = [p for p in re.split(r"[,\s]+", line.strip()) if p]
        try:
            d, t = int(parts[0]), float(parts[1])
        except (IndexError, ValueError):
            raise RaidlabError(label, f"{path.name}:{number}: expected 'distance, ms'") from None
        if distances and d <= distances[-1]:
            raise RaidlabError(label, f"{path.name}:{number}: distances must ascend")
        distances.append(d)
        times.append(t)
    if len(distances) != int(match.group(1)):
        raise RaidlabError(
            label, f"{path.name}: says {match.group(1)} distances, has {len(distances)}"
        )
    return distances, times


def _interpolate(distances: list[int], times: list[float], d: int) -> float:
    for i, d1 in enumerate(distances):
        if d1 >= d:
            if i == 0:
                return times[0]
            d0, t0, t1 = distances[i - 1], times[i - 1], times[i]
            return t0 + (d - d0) / (d1 - d0) * (t1 - t0)
    return times[-1]


OVERHEADS = {
    "Read hit over. after read": "overhead_ns_read_hit_after_read",
    "Read hit over. after write": "overhead_ns_read_hit_after_write",
    "Read miss over. after read": "overhead_ns_read_miss_after_read",
    "Read miss over. after write": "overhead_ns_read_miss_after_write",
    "Write hit over. after read": "overhead_ns_write_hit_after_read",
    "Write hit over. after write": "overhead_ns_write_hit_after_write",
    "Write miss over. after read": "overhead_ns_write_miss_after_read",
    "Write miss over. after write": "overhead_ns_write_miss_after_write",
}


def _firmware(drive: DriveFile, keys: _Keys, disk: Block, label: str) -> None:
    """Overheads, the bus time per sector, the buffer and its segments, the write
    cache and the queue, from the ``disksim_disk`` block."""
    scale, scale_src = keys.number("Time scale for overheads")
    per_request, per_request_src = keys.number("Per-request overhead time")
    if per_request != 0:
        drive.unrepresented.append(f"{per_request_src} (added to no command)")
    values = {}
    for key, raidlab_key in OVERHEADS.items():
        ms, src = keys.number(key)
        values[raidlab_key] = (_ms_to_ns(ms * scale), f"{src} x {scale_src}")
    ns, src = values["overhead_ns_read_miss_after_read"]
    drive.set("command_overhead_ns", ns, f"{src} (the datasheet figure: DiskSim's read miss)")
    for raidlab_key, (ns, src) in values.items():
        drive.set(raidlab_key, ns, src)
    per_sector, src = keys.number("Bulk sector transfer time")
    if per_sector <= 0:
        raise RaidlabError(label, f"{src}: must be above 0 (raidlab needs a link rate)")
    drive.set(
        "link_rate_bytes_per_s",
        round(SECTOR_BYTES / (per_sector * 1e-3)),
        f"derived: 512 B per {src} (the validation buses cost nothing)",
    )
    segments, seg_src = keys.number("Number of buffer segments")
    seg_blocks, seg_bytes_src = keys.number("Segment size (in blks)")
    seg_bytes = int(seg_blocks) * SECTOR_BYTES
    drive.set("cache_bytes", int(segments) * seg_bytes, f"derived: {seg_src} x {seg_bytes_src}")
    drive.set("cache_segments", int(segments), seg_src)
    drive.set("cache_segment_bytes", seg_bytes, seg_bytes_src + " x 512 B")
    caching, caching_src = keys.number("Enable caching in buffer")
    read_ahead, ra_src = keys.number("Maximum read-ahead (blks)")
    contread, contread_src = keys.number("Buffer continuous read")
    scheme = {1: "track", 2: "cylinder", 3: "segment", 4: "sequential"}.get(int(contread))
    ra_bytes = min(int(read_ahead) * SECTOR_BYTES, seg_bytes) if caching and scheme else 0
    drive.set(
        "read_ahead_bytes",
        ra_bytes,
        f"{ra_src} x 512 B, within a segment ({caching_src}; {contread_src}: 0 = none)",
    )
    if scheme is not None:
        drive.set(
            "read_ahead_scheme",
            scheme,
            f"{contread_src} (1 track, 2 cylinder, 3 segment, 4 one track ahead of a "
            "sequential stream)",
        )
    over, over_src = keys.number("Read-ahead over requested")
    if over == -1:
        drive.unrepresented.append(f"{over_src} (-1: modelled as 1)")
    drive.set("read_ahead_keeps_request", over == 0, f"{over_src} (0: the request's data stays)")
    hits, hits_src = keys.number("Allow read hits on write data")
    drive.set(
        "read_hits_on_write_data",
        hits != 0,
        f"{hits_src} (written data, cached writes too, serves later reads)",
    )
    fast, fast_src = keys.number("Fast write level")
    if fast == 1:
        drive.unrepresented.append(
            f"{fast_src}: limited fast writes are modelled as full ones (DiskSim's "
            "LIMITED_FASTWRITE differs only for a write appending to one still being "
            "written, taken then only with one request pending: disksim_diskctlr.c, "
            "disk_buffer_stopable_access)"
        )
    drive.set("write_cache", fast > 0, f"{fast_src} (0 = none, 1 limited, 2 full)")
    queue, queue_src = keys.number("Max queue length")
    drive.set("ncq_depth", max(1, int(queue)), queue_src)
    for key in ("Print stats", "Scheduler", "Avg sectors per cylinder"):
        if key in keys.left:
            keys.left.pop(key)  # statistics output / scheduling of a queue of one / a hint
