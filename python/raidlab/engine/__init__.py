"""Real arrays: a typed Python API over the ``raidlab-engine`` binary.

The engine (``crates/raidlab-engine``) keeps an array's bytes on member files or block
devices and serves it over NBD. This module runs the binary, asks it for ``--json``
reports and turns them into frozen dataclasses; it never touches member bytes itself,
so the Python API and ``raidlab-engine`` on a shell can never disagree.

While an array is served (``serve``), ``status``, ``fail``, ``replace``, ``check`` and
``repair`` given the same members reach the server over its control socket, so a member
is failed and rebuilt online while NBD clients keep working::

    from raidlab import engine

    members = [f"m{i}.img" for i in range(4)]
    engine.create(members, level=5, size="64M")
    with engine.serve(members) as server:        # a free port on 127.0.0.1
        print(server.uri)                        # nbd://127.0.0.1:PORT
        engine.fail(members[1], members)
        engine.replace(members[1], "spare.img", members, rate="200M",
                       progress=lambda done, total: print(f"{done}/{total}"))
        assert engine.check(["m0.img", "spare.img", "m2.img", "m3.img"]).clean

Bad input (the binary's exit status 2) raises :class:`raidlab.errors.RaidlabError`
carrying the binary's one-line message; ``check``'s exit status 1 (stripes mismatch) is
not an error: the mismatches are in the :class:`ScrubReport`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.units import parse_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

ENGINE_ENV = "RAIDLAB_ENGINE"
ENGINE_NAME = "raidlab-engine"
# python/raidlab/engine/__init__.py -> the repository (where cargo puts target/release).
REPO_ROOT = Path(__file__).resolve().parents[3]

# Every member starts with a superblock and a write-intent bitmap; array data starts
# here (docs/engine.md, On-disk format).
DATA_OFFSET_BYTES = 1 << 20
# How long `serve` may take to say it is ready: it may first resync dirty regions of
# an array stopped uncleanly, which on a large array takes a while.
SERVE_READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0

Member = str | os.PathLike[str]
Progress = Callable[[int, int], None]

# `rebuild member 1: 45% (1234/5678 B)`: the binary's progress line on stderr.
_PROGRESS_LINE = re.compile(r"^rebuild member (\d+): \d+% \((\d+)/(\d+) B\)$")
# `raidlab-engine: serving N B (raid5 clean) on nbd://HOST:PORT (control socket PATH)`
_READY_LINE = re.compile(
    r"^raidlab-engine: serving (?P<bytes>\d+) B \((?P<what>.*)\) on "
    r"(?:nbd://(?P<address>\S+))?(?: and )?(?P<unix>nbd\+unix://\S+)? "
    r"\(control socket (?P<control>.*)\)$"
)
# Canonical layout keys the binary reports for create's geometry errors, and the flag
# or argument the user actually gave.
_CREATE_FIELDS = {
    "drive_count": "MEMBER",
    "stripe_unit_bytes": "--stripe-unit",
    "capacity_bytes": "--size",
    "member_capacity_bytes": "--size",
}


# ---------------------------------------------------------------- locating the binary


def engine_path() -> Path:
    """The ``raidlab-engine`` binary to run.

    In order: ``$RAIDLAB_ENGINE``; ``raidlab-engine`` next to the Python interpreter
    (``make setup`` installs it into the venv's ``bin``); ``PATH``; the repository's
    ``target/release/raidlab-engine`` (a plain ``cargo build --release``).
    """
    configured = os.environ.get(ENGINE_ENV)
    if configured:
        path = Path(configured)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise RaidlabError(ENGINE_ENV, f"{configured!r} is not an executable file")
        return path
    # Not resolved: in a venv, sys.executable is .venv/bin/python, a symlink whose
    # target is the system interpreter's directory, not the venv's bin.
    candidates = [Path(sys.executable).parent / ENGINE_NAME]
    on_path = shutil.which(ENGINE_NAME)
    if on_path:
        candidates.append(Path(on_path))
    candidates.append(REPO_ROOT / "target" / "release" / ENGINE_NAME)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise RaidlabError(
        ENGINE_NAME,
        f"binary not found (looked at ${ENGINE_ENV}, next to {sys.executable}, on PATH and "
        f"in {REPO_ROOT / 'target' / 'release'}); run `make setup` to build and install it",
    )


# ---------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class MemberStatus:
    """One role of the array and the file or device that holds it."""

    role: int
    path: str | None
    # active, failed, missing, rebuilding, or e.g. "stale (events 3), not used".
    state: str
    # Read errors corrected by rewriting from the other members since assembly (md fails
    # the member instead after 20).
    read_errors_corrected: int = 0
    # md's bad-block list: (offset, length) in bytes of the member's data that it could
    # not read and the array could not rewrite yet; kept in its superblock.
    bad_blocks: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class RebuildStatus:
    """A rebuild under way onto ``path``."""

    role: int
    path: str
    done_bytes: int
    total_bytes: int

    @property
    def fraction(self) -> float:
        """Share of the member rebuilt, 0.0..1.0."""
        return self.done_bytes / self.total_bytes if self.total_bytes else 1.0


@dataclass(frozen=True)
class Fault:
    """A fault injected into a served member (``inject_fault``), live in the server."""

    member: int
    kind: str  # read-error | bad-sector | write-error | latency
    offset_bytes: int | None = None  # read-error, bad-sector, write-error: member data bytes
    len_bytes: int | None = None
    delay_ms: float | None = None  # latency


@dataclass(frozen=True)
class ArrayStatus:
    """An array's state as ``raidlab-engine status --json`` reports it."""

    uuid: str
    level: str
    layout: str | None
    chunk_bytes: int
    member_count: int
    capacity_bytes: int
    tolerated_failures: int
    state: str  # clean | degraded | rebuilding
    dirty: bool
    events: int
    # Reported by a server of the array: open, so its dirty flag says nothing of an
    # unclean stop.
    served: bool
    failed: tuple[int, ...]
    dirty_regions: int
    rebuild: RebuildStatus | None
    members: tuple[MemberStatus, ...]
    journal: str | None  # the write journal's path, if the array has one
    journal_replayed: int  # records replayed at assembly (an unclean stop)
    faults: tuple[Fault, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    # Hot spares: members with no role until one fails (absent from older engines).
    spares: tuple[str, ...] = ()
    # The UUID of the SSD cache the superblocks record in front of the array, if any
    # (absent from older engines): the array is then used with its cache members only.
    cache_uuid: str | None = None

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ArrayStatus:
        """Parse a status report; a report of another shape is a clear error."""
        try:
            rebuild = document["rebuild"]
            status = cls(
                uuid=str(document["uuid"]),
                level=str(document["level"]),
                layout=document["layout"],
                chunk_bytes=int(document["chunk_bytes"]),
                member_count=int(document["member_count"]),
                capacity_bytes=int(document["capacity_bytes"]),
                tolerated_failures=int(document["tolerated_failures"]),
                state=str(document["state"]),
                dirty=bool(document["dirty"]),
                events=int(document["events"]),
                served=bool(document.get("served", False)),
                failed=tuple(int(role) for role in document["failed"]),
                dirty_regions=int(document["dirty_regions"]),
                rebuild=None
                if rebuild is None
                else RebuildStatus(
                    role=int(rebuild["role"]),
                    path=str(rebuild["path"]),
                    done_bytes=int(rebuild["done_bytes"]),
                    total_bytes=int(rebuild["total_bytes"]),
                ),
                members=tuple(
                    MemberStatus(
                        int(m["role"]),
                        m["path"],
                        str(m["state"]),
                        int(m.get("read_errors_corrected", 0)),
                        tuple(
                            (int(b["offset_bytes"]), int(b["len_bytes"]))
                            for b in m.get("bad_blocks", ())
                        ),
                    )
                    for m in document["members"]
                ),
                # Absent from reports of engines older than the journal and faults.
                journal=document.get("journal"),
                journal_replayed=int(document.get("journal_replayed", 0)),
                faults=tuple(
                    Fault(
                        member=int(f["member"]),
                        kind=str(f["kind"]),
                        offset_bytes=f.get("offset_bytes"),
                        len_bytes=f.get("len_bytes"),
                        delay_ms=f.get("delay_ms"),
                    )
                    for f in document.get("faults", [])
                ),
                raw=dict(document),
                spares=tuple(str(p) for p in document.get("spares", [])),
                cache_uuid=document.get("cache_uuid"),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise RaidlabError(
                ENGINE_NAME, f"status report of an unexpected shape ({error!r}): {document}"
            ) from None
        assert len(status.members) == status.member_count, document
        assert all(role < status.member_count for role in status.failed), document
        return status

    def members_frame(self) -> pd.DataFrame:
        """One row per role: role, path, state, and the rebuild's done/total bytes."""
        import pandas as pd
        rows = []
        for member in self.members:
            rebuilding = self.rebuild is not None and self.rebuild.role == member.role
            rows.append(
                {
                    "role": member.role,
                    "path": member.path,
                    "state": member.state,
                    "failed": member.role in self.failed,
                    "read_errors_corrected": member.read_errors_corrected,
                    "rebuild_done_bytes": self.rebuild.done_bytes if rebuilding else None,
                    "rebuild_total_bytes": self.rebuild.total_bytes if rebuilding else None,
                }
            )
        frame = pd.DataFrame(rows)
        frame.attrs["status"] = dict(self.raw)
        return frame


@dataclass(frozen=True)
class ScrubReport:
    """What ``check`` (md's check: count) or ``repair`` (rewrite the block found bad)
    found."""

    stripes_checked: int
    mismatched_stripes: int
    repaired_stripes: int
    # Member reads that failed and were rewritten from the other members.
    read_errors_corrected: int = 0
    # Mismatched stripes repair left as they are: nothing tells which block is right
    # (RAID 4/5/50, two copies, two bad blocks of a RAID 6 stripe).
    unresolved_stripes: int = 0
    # Logical (offset, length) in bytes of the first unresolved stripes' data.
    unresolved: tuple[tuple[int, int], ...] = ()
    # Stripes not compared: bad blocks on more members than the level tolerates.
    unreadable_stripes: int = 0
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def clean(self) -> bool:
        """No stripe disagreed with its parity or copies."""
        return self.mismatched_stripes == 0

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ScrubReport:
        try:
            report = cls(
                stripes_checked=int(document["stripes_checked"]),
                mismatched_stripes=int(document["mismatched_stripes"]),
                repaired_stripes=int(document["repaired_stripes"]),
                read_errors_corrected=int(document.get("read_errors_corrected", 0)),
                unresolved_stripes=int(document.get("unresolved_stripes", 0)),
                unresolved=tuple(
                    (int(u["offset_bytes"]), int(u["len_bytes"]))
                    for u in document.get("unresolved", ())
                ),
                unreadable_stripes=int(document.get("unreadable_stripes", 0)),
                raw=dict(document),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise RaidlabError(
                ENGINE_NAME, f"scrub report of an unexpected shape ({error!r}): {document}"
            ) from None
        assert report.mismatched_stripes <= report.stripes_checked, document
        assert report.repaired_stripes <= report.mismatched_stripes, document
        return report

    def to_frame(self) -> pd.DataFrame:
        """The report as a one-row DataFrame."""
        import pandas as pd
        return pd.DataFrame([dict(self.raw)])


# ----------------------------------------------------------------- running the binary


def _arg(member: Member) -> str:
    """A member as an argument the binary cannot mistake for an option."""
    text = os.fspath(member)
    return f"./{text}" if text.startswith("-") else text


def _members(members: Sequence[Member] | Member) -> list[str]:
    if isinstance(members, str | os.PathLike):
        # A lone path is almost certainly a mistake for [path]; iterating it would
        # pass one argument per character.
        raise RaidlabError("members", f"expected a list of member paths, got {members!r}")
    return [_arg(m) for m in members]


def error_from_stderr(stderr: str, fields: Mapping[str, str] | None = None) -> RaidlabError:
    """The binary's last ``error: field: message`` line as a RaidlabError."""
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    text = lines[-1][len("error: ") :] if lines else " ".join(stderr.split()[-40:])
    name, separator, message = text.partition(": ")
    if not separator or " " in name.strip():
        # No `field:` prefix (e.g. "unknown command ..."): the message alone.
        return RaidlabError("", text)
    return RaidlabError((fields or {}).get(name, name), message)


def _raise_for(
    command: str, result: subprocess.CompletedProcess[str], fields: Mapping[str, str] | None
) -> None:
    if result.returncode == 2:
        raise error_from_stderr(result.stderr, fields)
    raise RaidlabError(
        ENGINE_NAME,
        f"{command} exited with status {result.returncode}: {' '.join(result.stderr.split())}",
    )


def _run(
    args: list[str],
    *,
    ok: tuple[int, ...] = (0,),
    fields: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    command = [str(engine_path()), *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode not in ok:
        _raise_for(args[0], result, fields)
    return result


def _json(result: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(result.stdout)
    except ValueError:
        raise RaidlabError(
            ENGINE_NAME, f"expected one JSON report on stdout, got {result.stdout[:200]!r}"
        ) from None


def _size_arg(value: int | str, flag: str) -> str:
    """Sizes are parsed here (raidlab's own syntax: 4K, 1.5M, 32GiB) and passed as bytes."""
    size_bytes = parse_size(value, flag)
    if size_bytes <= 0:
        raise RaidlabError(flag, f"must be above 0 B, got {value!r}")
    return str(size_bytes)


# ------------------------------------------------------------------ the engine's flags


@functools.cache
def flag_table() -> Mapping[str, Mapping[str, Any]]:
    """The engine's subcommands by name, with their arguments, as its clap definitions
    declare them (``raidlab._native.engine_flags``, see docs/engine.md): the one
    declaration the ``raidlab create/serve/...`` commands and this client are built
    from. Per argument: ``id``, ``long``, ``aliases``, ``help``, ``defaults``,
    ``value_names``, ``value_delimiter``, ``required``, ``takes_value``, ``repeated``,
    ``positional``."""
    # Imported here: `raidlab --version` and the simulating commands start without it.
    from raidlab import _native

    table = json.loads(_native.engine_flags())
    return {command["name"]: command for command in table["commands"]}


def flag_defaults(command: str) -> dict[str, str | None]:
    """The engine's default of every option of ``command`` that takes a value (None:
    the option is left out unless given), by argument id."""
    return {
        arg["id"]: (arg["defaults"][0] if arg["defaults"] else None)
        for arg in flag_table()[command]["args"]
        if arg["takes_value"] and not arg["positional"]
    }


def _option_value(arg: Mapping[str, Any], value: Any) -> str:
    """An option's value as the engine takes it: paths escaped, lists joined."""
    if arg["value_delimiter"] and not isinstance(value, str | os.PathLike):
        items = [_arg(item) for item in value]
        for item in items:
            if arg["value_delimiter"] in item:
                raise RaidlabError(
                    f"--{arg['long']}", f"paths without a {arg['value_delimiter']!r}, got {item!r}"
                )
        return arg["value_delimiter"].join(items)
    if isinstance(value, os.PathLike):
        return _arg(value)
    return str(value)


def command_args(command: str, options: Mapping[str, Any]) -> list[str]:
    """The engine's argv after ``command`` for ``options`` keyed by its argument ids
    (``stripe_unit``, ``cache_members``, ``members``): options first, in the table's
    order, then the positional arguments; None and False leave an argument out."""
    args = flag_table()[command]["args"]
    known = {arg["id"] for arg in args}
    unknown = sorted(set(options) - known)
    if unknown:
        raise RaidlabError(
            unknown[0], f"not an option of {command}; allowed: {', '.join(sorted(known))}"
        )
    flags: list[str] = []
    positionals: list[str] = []
    for arg in args:
        value = options.get(arg["id"])
        if value is None or value is False:
            continue
        if arg["positional"]:
            values = _members(value) if arg["repeated"] else [_arg(str(value))]
            positionals += values
        elif not arg["takes_value"]:
            flags.append(f"--{arg['long']}")
        elif arg["repeated"] and not arg["value_delimiter"]:
            # Given once per value (--force-overwrite A --force-overwrite B).
            for item in _members(value):
                flags += [f"--{arg['long']}", item]
        else:
            flags += [f"--{arg['long']}", _option_value(arg, value)]
    return [*flags, *positionals]


# ------------------------------------------------------------------------- operations


def create(
    members: Sequence[Member],
    level: int | str,
    stripe_unit: int | str | None = None,
    size: int | str | None = None,
    layout: str | None = None,
    copies: int | str | None = None,
    spans: int | str | None = None,
    uuid: str | None = None,
    force_overwrite: Sequence[Member] = (),
    assume_clean: bool = False,
    journal: Member | None = None,
    journal_size: int | str | None = None,
    sparse: bool = False,
    consistency_policy: str | None = None,
    integrity: str | None = None,
    cache_members: Sequence[Member] | None = None,
    cache_policy: str | None = None,
    cache_size: int | str | None = None,
    cache_region: int | str | None = None,
    spares: Sequence[Member] = (),
    chunk: int | str | None = None,
) -> ArrayStatus:
    """Create an array on ``members`` (files are created or extended to ``size`` each;
    omit ``size`` for block devices). Members that held data are resynced unless
    ``assume_clean``; files that carry another array's member, spare, journal or cache
    are refused unless named in ``force_overwrite`` (each file to overwrite; a file
    the command does not write is refused). Files are created mode 0600.
    ``journal`` (a file or device) adds a write journal that closes the RAID 5 write
    hole; every later operation on the array then needs the same ``journal``. Member
    files (and the journal file) are preallocated unless ``sparse``.
    ``consistency_policy`` (mdadm's): ``resync``, ``bitmap``, ``journal`` (with
    ``journal``) or ``ppl`` (md's partial parity log; RAID 4, 5, 6, 50, 60); by default
    ``ppl`` on those and ``bitmap`` elsewhere.
    ``integrity`` (dm-integrity's): ``none`` (the default) or ``crc32c``, a checksum per
    4 KiB block of every member, so reads and ``repair`` tell a good copy from a bad
    one (with the ``bitmap`` or ``resync`` policy; parity levels then default to
    ``bitmap``).
    ``cache_members`` (2: RAID 1, 4 or more: RAID 10) put an SSD cache tier in front,
    with ``cache_policy`` (``raidix``, the default, ``lru``, ``smq`` or ``bcache``),
    members of ``cache_size`` each and log-structured regions of ``cache_region``; the
    array then needs the same ``cache_members`` wherever it is assembled (every
    operation below takes them), until ``detach_cache``.

    ``spares`` are hot spares (sized as the members): when a member of the served array
    fails, the first takes its role and is rebuilt online by itself, as md does.
    ``stripe_unit`` is the bytes of a stripe on one member (the engine's default
    without it); ``chunk``, mdadm's word for it, is the same."""
    # Over 70 lines for its keyword list and docstring (the public API); the body only
    # turns the keywords into the engine's argument ids, which `command_args` checks.
    if stripe_unit is not None and chunk is not None:
        raise RaidlabError("stripe_unit", "give stripe_unit or chunk (the same thing), not both")
    if isinstance(spares, str | os.PathLike):
        raise RaidlabError("--spares", f"a list of paths, got the single path {spares!r}")
    sizes = {
        "stripe_unit": stripe_unit if stripe_unit is not None else chunk,
        "size": size,
        "journal_size": journal_size,
        "cache_size": cache_size,
        "cache_region": cache_region,
    }
    options: dict[str, Any] = {
        key: None if value is None else _size_arg(value, "--" + key.replace("_", "-"))
        for key, value in sizes.items()
    }
    if options["size"] is not None and int(options["size"]) <= DATA_OFFSET_BYTES:
        raise RaidlabError(
            "--size",
            f"each member needs more than the {DATA_OFFSET_BYTES >> 20} MiB its superblock "
            f"and write-intent bitmap take, got {size!r}",
        )
    options.update(
        level=level,
        layout=layout,
        copies=copies,
        spans=spans,
        uuid=uuid,
        force_overwrite=list(force_overwrite) or None,
        assume_clean=assume_clean,
        sparse=sparse,
        journal=journal,
        consistency_policy=consistency_policy,
        integrity=integrity,
        cache_members=cache_members or None,
        cache_policy=cache_policy,
        spares=list(spares) or None,
        members=members,
    )
    return ArrayStatus.from_json(run_report("create", options))


def attach_cache(
    members: Sequence[Member],
    cache_members: Sequence[Member],
    cache_policy: str | None = None,
    cache_size: int | str | None = None,
    cache_region: int | str | None = None,
    force_overwrite: Sequence[Member] = (),
    journal: Member | None = None,
) -> ArrayStatus:
    """Put a new, empty SSD cache on ``cache_members`` (2: RAID 1, 4 or more: RAID 10)
    in front of the array of ``members`` (not served), with ``cache_policy``,
    ``cache_size`` and ``cache_region`` as in ``create``; cache members that carry a
    raidlab superblock must be named in ``force_overwrite``. Refused for an array that
    has a cache already. From then on the array needs ``cache_members`` wherever it is assembled."""
    if not cache_members:
        raise RaidlabError("--cache-members", "the new cache's members, 2 or an even 4 or more")
    options = {
        "members": members,
        "cache_members": cache_members,
        "cache_policy": cache_policy,
        "cache_size": None if cache_size is None else _size_arg(cache_size, "--cache-size"),
        "cache_region": None if cache_region is None else _size_arg(cache_region, "--cache-region"),
        "force_overwrite": list(force_overwrite) or None,
        "journal": journal,
    }
    return ArrayStatus.from_json(run_report("attach-cache", options))


def detach_cache(
    members: Sequence[Member],
    cache_members: Sequence[Member],
    journal: Member | None = None,
    adopt: bool = False,
) -> ArrayStatus:
    """Hand every dirty line of the array's SSD cache (``cache_members``) back to the
    array of ``members`` (not served), then take the cache out of its superblocks: the
    array is used without ``cache_members`` afterwards, with all its data. A crash
    during it leaves the array either still cached (its cache intact: run it again) or
    detached. The report says ``raw["destaged_bytes"]`` and
    ``raw["detached_cache_uuid"]``. ``adopt``: the array's superblocks record no cache
    (its cache was made by a raidlab from before they did) and the cache's header
    names the array; only right when the array was not written without it since."""
    if not cache_members:
        raise RaidlabError("--cache-members", "the members of the array's cache")
    options = {
        "members": members,
        "cache_members": cache_members,
        "journal": journal,
        "adopt": adopt,
    }
    return ArrayStatus.from_json(run_report("detach-cache", options))


def replace_cache(
    members: Sequence[Member],
    cache_members: Sequence[Member],
    new: Member,
    journal: Member | None = None,
) -> ArrayStatus:
    """After a cache SSD is lost: rebuild the lost member of the SSD cache mirror onto
    ``new`` (a blank file or device; created when missing) from the surviving
    ``cache_members``, with the array of ``members`` stopped. The cache then has
    ``cache_members`` and ``new`` as its members. Refused when ``new`` carries a
    raidlab superblock or journal, or the cache lacks no member."""
    if not cache_members:
        raise RaidlabError("--cache-members", "the surviving members of the array's cache")
    options = {
        "new": new,
        "members": members,
        "cache_members": cache_members,
        "journal": journal,
    }
    return ArrayStatus.from_json(run_report("replace-cache", options))


def add_spare(
    spare: Member,
    members: Sequence[Member],
    journal: Member | None = None,
    cache_members: Sequence[Member] | None = None,
) -> ArrayStatus:
    """Add ``spare`` (a file or device holding at least a member's size, with no raidlab
    superblock) as a hot spare: online when the array is served (a degraded array then
    starts rebuilding onto it at once), else recorded in the superblocks."""
    options = {
        "spare": spare,
        "members": members,
        "journal": journal,
        "cache_members": cache_members or None,
    }
    return ArrayStatus.from_json(run_report("add-spare", options))


def status(
    members: Sequence[Member],
    journal: Member | None = None,
    force: bool = False,
    cache_members: Sequence[Member] | None = None,
) -> ArrayStatus:
    """Assemble ``members`` (or ask their server) and report the array's state.
    ``force`` (mdadm's ``--assemble --force``): put the freshest stale members back in
    when the array would not assemble otherwise (which ones: ``raw["forced"]``, also
    said on stderr); run ``check`` after it. With ``cache_members`` the report has the
    cache tier's counters under ``raw["cache"]``."""
    options = {
        "members": members,
        "journal": journal,
        "force": force,
        "cache_members": cache_members or None,
    }
    return ArrayStatus.from_json(run_report("status", options))


assemble = status


def fail(
    target: Member | int,
    members: Sequence[Member],
    journal: Member | None = None,
    cache_members: Sequence[Member] | None = None,
) -> ArrayStatus:
    """Mark ``target`` (a member path or a role index) failed; the array runs degraded."""
    options = {
        "target": target,
        "members": members,
        "journal": journal,
        "cache_members": cache_members or None,
    }
    return ArrayStatus.from_json(run_report("fail", options))


def replace(
    old: Member | int,
    new: Member,
    members: Sequence[Member],
    rate: int | str | None = None,
    wait: bool = True,
    progress: Progress | None = None,
    journal: Member | None = None,
    cache_members: Sequence[Member] | None = None,
    force_overwrite: bool = False,
) -> ArrayStatus:
    """Rebuild the role of ``old`` (a path or role index) onto ``new``.

    ``new`` that carries another array's member, spare, journal or cache is refused
    unless ``force_overwrite`` (``new`` is overwritten all the same); this array's own
    journal or cache members always are. Its space is allocated before ``old`` is
    failed, so a full filesystem changes nothing.

    Offline when the array is not served; online (clients keep working) when it is.
    ``rate`` caps the rebuild in bytes/s (``"200M"``). ``progress(done_bytes,
    total_bytes)`` is called as the binary reports progress (on entering each 5 % band,
    and at the end).
    ``wait=False`` (served arrays only) returns as soon as the rebuild has started.
    """
    options = {
        "old": old,
        "new": new,
        "members": members,
        "rate": None if rate is None else _size_arg(rate, "--rate"),
        "no_wait": not wait,
        "journal": journal,
        "cache_members": cache_members or None,
        "force_overwrite": [new] if force_overwrite else None,
    }
    return run_replace(options, progress)


def run_replace(options: Mapping[str, Any], progress: Progress | None = None) -> ArrayStatus:
    """``replace`` with ``options`` keyed by the engine's argument ids (``old``, ``new``,
    ``members``, ``rate``, ...), its progress lines on stderr passed to ``progress``."""
    args = ["replace", *command_args("replace", {**options, "json": True})]
    command = [str(engine_path()), *args]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        stdout: list[str] = []
        reader = threading.Thread(target=lambda: stdout.append(process.stdout.read()))  # type: ignore[union-attr]
        reader.start()
        stderr: list[str] = []
        for line in process.stderr:
            match = _PROGRESS_LINE.match(line.strip())
            if match is None:
                stderr.append(line)
            elif progress is not None:
                progress(int(match.group(2)), int(match.group(3)))
        reader.join()
        returncode = process.wait()
    result = subprocess.CompletedProcess(command, returncode, "".join(stdout), "".join(stderr))
    if returncode != 0:
        _raise_for("replace", result, None)
    return ArrayStatus.from_json(_json(result))


def run_report(command: str, options: Mapping[str, Any]) -> Any:
    """Run ``command`` with ``options`` keyed by the engine's argument ids (see
    :func:`command_args`) and ``--json``: its JSON report, or None when it prints none
    (``inject``'s bit flip). ``check``'s exit status 1 (mismatches) and ``repair``'s
    (unresolved stripes) are reports."""
    args = [command, *command_args(command, {**options, "json": True})]
    result = _run(
        args,
        ok=(0, 1) if command in ("check", "repair") else (0,),
        fields=_CREATE_FIELDS if command == "create" else None,
    )
    if command == "status" and options.get("force") and result.stderr:
        # Which stale members were forced back in.
        sys.stderr.write(result.stderr)
    return _json(result) if result.stdout.strip() else None


def check(
    members: Sequence[Member],
    journal: Member | None = None,
    cache_members: Sequence[Member] | None = None,
) -> ScrubReport:
    """md's ``check``: read every stripe and count those whose parity or copies disagree."""
    options = {"members": members, "journal": journal, "cache_members": cache_members or None}
    return ScrubReport.from_json(run_report("check", options))


def repair(
    members: Sequence[Member],
    journal: Member | None = None,
    cache_members: Sequence[Member] | None = None,
) -> ScrubReport:
    """``repair``: rewrite the block found bad (RAID 6 from P and Q, three or more copies
    by majority); stripes where nothing tells which block is right are reported in
    ``unresolved`` and kept (the engine exits 1, which is still a report)."""
    options = {"members": members, "journal": journal, "cache_members": cache_members or None}
    return ScrubReport.from_json(run_report("repair", options))


def inject(member: Member, offset: int | str, mask: int | str | None = None) -> None:
    """Flip the bits ``mask`` of data byte ``offset`` of ``member`` (fault injection for
    tests: ``check`` then finds the stripe that holds it). ``mask`` is an int 1..255 or
    hex text as the binary takes it (``"0x01"``); the engine's default (every bit)
    without it."""
    if isinstance(mask, bool) or (isinstance(mask, int) and not 1 <= mask <= 0xFF):
        raise RaidlabError("--mask", f"a nonzero byte, 1..255 (0x01..0xff), got {mask!r}")
    options = {
        "member": member,
        "offset": parse_size(offset, "OFFSET"),
        "mask": f"{mask:#04x}" if isinstance(mask, int) else mask,
    }
    _run(["inject", *command_args("inject", options)])


def _extent_arg(extent: str | tuple[int | str, int | str], flag: str) -> str:
    if isinstance(extent, str):
        return extent  # OFF[+LEN] as the binary takes it (LEN defaults to 4K)
    offset, length = extent
    return f"{parse_size(offset, flag)}+{_size_arg(length, flag)}"


def inject_fault(
    member: Member,
    *,
    read_error: str | tuple[int | str, int | str] | None = None,
    write_error: str | tuple[int | str, int | str] | None = None,
    latency: str | None = None,
    clear: bool = False,
    bad_sector: str | tuple[int | str, int | str] | None = None,
) -> ArrayStatus:
    """Give a member of a *served* array a fault, as a dying disk would have: reads
    (``read_error``) or writes (``write_error``) of its data bytes ``(offset, length)``
    or ``"1M+64K"`` fail, and the member fails when one is hit; ``bad_sector``: reads
    fail until the bytes are written, and the array rewrites them from the other
    members, as md does, so the member stays; ``latency`` (``"20ms"``, ``"500us"``)
    delays its every I/O; ``clear`` removes the array's faults. Exactly one."""
    extents = {"read_error": read_error, "bad_sector": bad_sector, "write_error": write_error}
    given = [key for key, value in [*extents.items(), ("latency", latency)] if value is not None]
    if len(given) + int(clear) != 1:
        raise RaidlabError(
            "inject",
            "exactly one of read_error, bad_sector, write_error, latency or clear is needed",
        )
    options: dict[str, Any] = {"member": member, "clear": clear, "latency": latency}
    for key, extent in extents.items():
        if extent is not None:
            options[key] = _extent_arg(extent, "--" + key.replace("_", "-"))
    return ArrayStatus.from_json(run_report("inject", options))


# ---------------------------------------------------------------------------- serving


class Server:
    """A running ``raidlab-engine serve``: use as a context manager, or call ``stop``.

    The constructor returns once the server has said it is serving (``uri`` is then
    known); if it exits first or stays silent past ``timeout_s``, RaidlabError carries
    what it printed on stderr.
    """

    def __init__(
        self,
        members: Sequence[Member],
        options: Mapping[str, Any] | None = None,
        *,
        timeout_s: float = SERVE_READY_TIMEOUT_S,
        log: Callable[[str], None] | None = None,
    ) -> None:
        # Keys and defaults are the engine's (`flag_defaults("serve")`); None keeps its
        # default: the export on the private Unix socket alone, TCP only with `listen`.
        chosen = dict(options or {})
        if "members" in chosen:
            raise RaidlabError("members", "the members are the first argument, not an option")
        args = ["serve", *command_args("serve", chosen)]
        self.members = _members(members)
        self.command = [str(engine_path()), *args, *self.members]
        self._log = log
        self._lines: list[str] = []
        self._ready = threading.Event()
        self._ready_match: re.Match[str] | None = None
        self._process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self._process.stderr is not None
        # Drains stderr for the server's whole life, so it never blocks on a full pipe.
        self._reader = threading.Thread(
            target=self._read_stderr, args=(self._process.stderr,), daemon=True
        )
        self._reader.start()
        self._wait_ready(timeout_s)

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            line = line.rstrip("\n")
            self._lines.append(line)
            if self._ready_match is None:
                self._ready_match = _READY_LINE.match(line)
                if self._ready_match is not None:
                    self._ready.set()
                    continue
            # Before the ready line the engine says what the user must know (a listener
            # that is no loopback and has no TLS, an unclean stop it recovered from):
            # forwarded too. An `error:` line is not: the failure raises it, once.
            if self._log is not None and (self._ready.is_set() or not line.startswith("error:")):
                self._log(line)
        self._ready.set()  # EOF: the server has exited (or closed stderr)

    def _wait_ready(self, timeout_s: float) -> None:
        if self._ready.wait(timeout_s) and self._ready_match is not None:
            return
        if self._ready_match is None and not self._ready.is_set():
            self._process.kill()
            self._process.wait()
            self._reader.join(5)
            raise RaidlabError(
                "serve",
                f"raidlab-engine was not serving after {timeout_s:g} s; "
                f"stderr: {self.stderr or '(nothing)'}",
            )
        returncode = self._process.wait()
        self._reader.join(5)
        if returncode == 2:
            raise error_from_stderr(self.stderr)
        raise RaidlabError(
            "serve",
            f"raidlab-engine exited with status {returncode} before serving; "
            f"stderr: {self.stderr or '(nothing)'}",
        )

    @property
    def stderr(self) -> str:
        """Everything the server printed on stderr so far."""
        return "\n".join(self._lines)

    @property
    def address(self) -> str | None:
        """``HOST:PORT`` the server listens on (the port the OS chose for port 0); None
        when it exports on its Unix socket only (without ``listen``, the default)."""
        assert self._ready_match is not None
        return self._ready_match.group("address")

    @property
    def unix_uri(self) -> str | None:
        """The Unix socket export, ``nbd+unix:///NAME?socket=PATH`` (the default, or
        ``unix`` with ``listen``), or None (``listen`` alone)."""
        assert self._ready_match is not None
        return self._ready_match.group("unix")

    @property
    def uri(self) -> str:
        """The export as an NBD URI: ``nbd://HOST:PORT``, or the Unix socket's
        ``nbd+unix://`` one when there is no TCP listener."""
        if self.address is not None:
            return f"nbd://{self.address}"
        unix = self.unix_uri
        assert unix is not None
        return unix

    @property
    def capacity_bytes(self) -> int:
        assert self._ready_match is not None
        return int(self._ready_match.group("bytes"))

    @property
    def control_socket(self) -> str:
        """The Unix socket status/fail/replace/check/repair reach the server by."""
        assert self._ready_match is not None
        return self._ready_match.group("control")

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """None while running; the exit status once stopped."""
        return self._process.poll()

    def send_signal(self, signum: int) -> None:
        """Forward a signal (SIGINT and SIGTERM stop the server cleanly)."""
        if self._process.poll() is None:
            self._process.send_signal(signum)

    def wait(self, timeout_s: float | None = None) -> int:
        """Wait for the server to exit; its exit status."""
        returncode = self._process.wait(timeout_s)
        self._reader.join(5)
        return returncode

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM (the server flushes and marks the array clean) and wait for it.
        A server that does not stop within ``timeout_s`` is killed and reported."""
        self.send_signal(signal.SIGTERM)
        try:
            returncode = self.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self.wait()
            raise RaidlabError(
                "serve", f"did not stop within {timeout_s:g} s of SIGTERM; killed"
            ) from None
        if returncode != 0:
            if returncode == 2:
                raise error_from_stderr(self.stderr)
            raise RaidlabError("serve", f"exited with status {returncode}; stderr: {self.stderr}")
        return returncode

    def __enter__(self) -> Server:
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        if exc_type is None:
            self.stop()
            return
        # Already failing: stop anyway, but let the original error through.
        try:
            self.stop()
        except RaidlabError:
            pass


def serve(
    members: Sequence[Member],
    options: Mapping[str, Any] | None = None,
    *,
    timeout_s: float = SERVE_READY_TIMEOUT_S,
    log: Callable[[str], None] | None = None,
    **more: Any,
) -> Server:
    """Serve the array on ``members`` over NBD; returns once it is ready.

    ``options`` (and keyword arguments, which add to them) are the engine's ``serve``
    flags by argument id, as :func:`flag_defaults` lists them with their defaults:
    ``listen`` (``HOST:PORT`` for TCP clients, port 0 for a free one the OS picks,
    read back from ``Server.uri``; without it the export is on a Unix socket private
    to this user alone, ``Server.uri`` is its ``nbd+unix://`` URI), ``unix`` (True
    with ``listen``: on both),
    ``evict_idle_after``, ``idle_timeout``, ``io_timeout``, ``requests_in_flight``,
    ``bitmap_delay``, ``tls_cert``, ``tls_key``, ``tls_psk``, ``tls``, ``name``,
    ``memory_limit``, ``journal``, ``cache_members`` (the SSD cache tier of an array
    created with one), ...; see ``raidlab-engine serve --help``. ``log`` receives each
    line the server prints on stderr after it is ready.
    """
    return Server(members, {**(options or {}), **more}, timeout_s=timeout_s, log=log)


def wait_rebuilt(
    members: Sequence[Member],
    timeout_s: float = 600.0,
    poll_s: float = 0.1,
    journal: Member | None = None,
) -> ArrayStatus:
    """Poll ``status`` until no rebuild is under way (after ``replace(wait=False)``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        current = status(members, journal)
        if current.rebuild is None:
            return current
        if time.monotonic() > deadline:
            raise RaidlabError(
                "replace", f"rebuild still under way after {timeout_s:g} s: {current.rebuild}"
            )
        time.sleep(poll_s)


__all__ = [
    "ArrayStatus",
    "Fault",
    "MemberStatus",
    "RebuildStatus",
    "ScrubReport",
    "Server",
    "add_spare",
    "assemble",
    "attach_cache",
    "check",
    "command_args",
    "create",
    "detach_cache",
    "engine_path",
    "fail",
    "flag_defaults",
    "flag_table",
    "inject",
    "inject_fault",
    "repair",
    "replace",
    "replace_cache",
    "run_replace",
    "run_report",
    "serve",
    "status",
    "wait_rebuilt",
]
