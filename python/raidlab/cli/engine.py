"""``raidlab create/assemble/status/serve/fail/replace/add-spare/check/repair/inject``:
real arrays.

These commands drive the real-data engine (the ``raidlab-engine`` binary) through
:mod:`raidlab.engine`; the simulating commands live in :mod:`raidlab.cli`, which
registers these with :func:`register`. Options are text, passed on to the engine,
which names the flag in its errors; bad input prints one line ``error: <field>:
<what is allowed>`` and exits with status 2, as every raidlab command does.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from raidlab import engine
from raidlab.errors import RaidlabError, user_errors
from raidlab.units import format_size

_stdout = Console(soft_wrap=True, highlight=False)
_stderr = Console(stderr=True, soft_wrap=True, highlight=False)


def _members(members: list[Path] | None) -> list[Path]:
    # Optional on the command line so that a missing member list gets the engine's
    # one-line error instead of click's multi-line usage text.
    return list(members or [])


MembersArgument = Annotated[
    list[Path] | None,
    typer.Argument(help="Member files or block devices, in any order.", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON report on stdout.")]
CacheMembersOption = Annotated[
    str | None,
    typer.Option(
        "--cache-members",
        help="SSD cache members, comma-separated (2: RAID 1, 4+: RAID 10); an array "
        "with a cache needs them wherever it is assembled, until detach-cache (default: "
        "no cache).",
    ),
]
CacheSizeOption = Annotated[
    str | None,
    typer.Option("--cache-size", help="Size of every cache member (default: as they are)."),
]
CacheRegionOption = Annotated[
    str | None,
    typer.Option(
        "--cache-region",
        help="Log-structured region of the cache (default: a sixteenth of it, at most 1G).",
    ),
]
JournalOption = Annotated[
    Path | None,
    typer.Option(
        "--journal", help="The array's write journal (needed if created with one; default: none)."
    ),
]


def _cache_members(value: str | None) -> list[Path] | None:
    return None if value is None else [Path(p) for p in value.split(",") if p]


def _print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


def _print_status(status: engine.ArrayStatus, as_json: bool) -> None:
    if as_json:
        _print_json(status.raw)
        return
    layout = f" ({status.layout})" if status.layout else ""
    failed = ",".join(str(role) for role in status.failed) or "none"
    if status.served:
        dirty = " (served: open in a server, whose bitmap marks the regions being written)"
    elif status.dirty:
        dirty = " (dirty: stopped uncleanly; serve resyncs its dirty regions)"
    else:
        dirty = ""
    summary = (
        f"{status.level}{layout}, chunk {format_size(status.chunk_bytes)}, "
        f"{status.member_count} members, capacity {format_size(status.capacity_bytes)} "
        f"({status.capacity_bytes} B), survives {status.tolerated_failures} failure(s)\n"
        f"state {status.state}{dirty}, failed roles {failed}, events {status.events}, "
        f"dirty bitmap regions {status.dirty_regions}"
    )
    if status.cache_uuid is not None:
        summary += f"\ncached: SSD cache {status.cache_uuid} in front (give its --cache-members)"
    if status.journal is not None:
        summary += (
            f"\nwrite journal {status.journal} "
            f"({status.journal_replayed} records replayed at assembly)"
        )
    cache = status.raw.get("cache")
    if isinstance(cache, dict):
        summary += (
            f"\ncache {cache.get('policy')} ({cache.get('mirror_level')}): "
            f"{cache.get('cached_lines')} of {cache.get('slots')} lines cached, "
            f"{cache.get('dirty_lines')} dirty; read hits {cache.get('read_hit_ratio', 0):.1%} "
            f"(RRC {cache.get('read_hit_lines_rrc')}, RWC {cache.get('read_hit_lines_rwc')}, "
            f"main {cache.get('read_hit_lines_main')}), write hits "
            f"{cache.get('write_hit_ratio', 0):.1%}; admitted {cache.get('read_admitted_lines')}, "
            f"evicted {cache.get('evicted_clean_lines')} clean + "
            f"{cache.get('evicted_dirty_lines')} dirty lines, "
            f"destaged {cache.get('destaged_bytes')} B"
        )
    for fault in status.faults:
        where = (
            f"{fault.delay_ms:g} ms per I/O"
            if fault.kind == "latency"
            else f"data bytes [{fault.offset_bytes}, +{fault.len_bytes})"
        )
        summary += f"\ninjected fault on role {fault.member}: {fault.kind}, {where}"
    table = Table(title=f"array {status.uuid}")
    table.add_column("role", justify="right")
    table.add_column("member", no_wrap=True)
    table.add_column("state", no_wrap=True)
    for member in status.members:
        state = member.state
        if member.read_errors_corrected:
            state += f" ({member.read_errors_corrected} read errors corrected)"
        rebuild = status.rebuild
        if rebuild is not None and rebuild.role == member.role:
            state = (
                f"rebuilding {rebuild.fraction:.0%} ({rebuild.done_bytes}/{rebuild.total_bytes} B)"
            )
        table.add_row(str(member.role), member.path or "-", state)
    # Paths are copied into the next command: widen past the terminal rather than cut one.
    # (Console.print caps width at the console's, hence a console as wide as the table.)
    natural = Measurement.get(_stdout, _stdout.options.update_width(10_000), table).maximum
    Console(highlight=False, width=max(_stdout.width, natural)).print(table)
    for spare in status.spares:
        summary += f"\nhot spare {spare} (no role until a member fails)"
    typer.echo(summary)


def _print_scrub(report: engine.ScrubReport, as_json: bool, title: str) -> None:
    if as_json:
        _print_json(report.raw)
        return
    table = Table(title=title)
    for column in ("stripes checked", "mismatched", "repaired", "read errors corrected"):
        table.add_column(column, justify="right")
    table.add_row(
        str(report.stripes_checked),
        str(report.mismatched_stripes),
        str(report.repaired_stripes),
        str(report.read_errors_corrected),
    )
    _stdout.print(table)


def create(
    members: MembersArgument = None,
    level: Annotated[
        str | None,
        typer.Option("--level", help="RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or concat (required)."),
    ] = None,
    chunk: Annotated[str, typer.Option("--chunk", help="Chunk (stripe unit) size.")] = "64K",
    size: Annotated[
        str | None,
        typer.Option(
            "--size",
            help="Size of each member file, created or extended (default: the members' "
            "own size; the smallest one counts).",
        ),
    ] = None,
    layout: Annotated[
        str | None,
        typer.Option(
            "--layout",
            help="RAID 5/6: ls, la, rs, ra (default ls); RAID 10: near, far, offset "
            "(default near).",
        ),
    ] = None,
    copies: Annotated[
        str | None, typer.Option("--copies", help="RAID 10 copies (default 2).")
    ] = None,
    spans: Annotated[
        str | None, typer.Option("--spans", help="RAID 50/60 spans (default 2).")
    ] = None,
    uuid: Annotated[
        str | None, typer.Option("--uuid", help="Array UUID (hex; default: random).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite members of another array.")
    ] = False,
    assume_clean: Annotated[
        bool, typer.Option("--assume-clean", help="Skip the initial resync of old data.")
    ] = False,
    sparse: Annotated[
        bool,
        typer.Option(
            "--sparse",
            help="Leave member files sparse (not preallocated): a full filesystem then "
            "answers writes ENOSPC.",
        ),
    ] = False,
    journal: JournalOption = None,
    journal_size: Annotated[
        str | None, typer.Option("--journal-size", help="Journal size (default: 256M).")
    ] = None,
    consistency_policy: Annotated[
        str | None,
        typer.Option(
            "--consistency-policy",
            help="resync, bitmap (default), journal (with --journal) or ppl (md's partial "
            "parity log, RAID 5 only).",
        ),
    ] = None,
    cache_members: CacheMembersOption = None,
    cache_policy: Annotated[
        str | None,
        typer.Option(
            "--cache-policy", help="raidix (default), lru, smq or bcache (with --cache-members)."
        ),
    ] = None,
    cache_size: CacheSizeOption = None,
    cache_region: CacheRegionOption = None,
    spares: Annotated[
        str | None,
        typer.Option(
            "--spares",
            help="Hot spares, comma-separated: when a served member fails, a spare takes its "
            "role and is rebuilt online (default: none).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an array on member files or devices; --journal adds a write journal that
    closes the RAID 5 write hole."""
    with user_errors():
        if level is None:
            raise RaidlabError("--level", "required: 0, 1, 4, 5, 6, 10, 50, 60 or concat")
        status = engine.create(
            _members(members),
            level=level,
            chunk=chunk,
            size=size,
            layout=layout,
            copies=copies,
            spans=spans,
            uuid=uuid,
            force=force,
            assume_clean=assume_clean,
            sparse=sparse,
            journal=journal,
            journal_size=journal_size,
            consistency_policy=consistency_policy,
            cache_members=_cache_members(cache_members),
            cache_policy=cache_policy,
            cache_size=cache_size,
            cache_region=cache_region,
            spares=[Path(p) for p in spares.split(",")] if spares else (),
        )
        _print_status(status, as_json)


def status(
    members: MembersArgument = None,
    journal: JournalOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Put the freshest stale members back in when the array would not "
            "assemble otherwise (then run check).",
        ),
    ] = False,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """Assemble the members (or ask their server) and show the array's state."""
    with user_errors():
        _print_status(
            engine.status(
                _members(members),
                journal,
                force=force,
                cache_members=_cache_members(cache_members),
            ),
            as_json,
        )


def serve(
    members: MembersArgument = None,
    listen: Annotated[
        str, typer.Option("--listen", help="HOST:PORT to serve NBD on (port 0: any free port).")
    ] = "127.0.0.1:10809",
    connections_max: Annotated[
        str | None,
        typer.Option("--connections-max", help="Concurrent NBD connections (default: 16)."),
    ] = None,
    requests_in_flight: Annotated[
        str | None,
        typer.Option(
            "--requests-in-flight", help="Requests of one connection served at once (default: 8)."
        ),
    ] = None,
    bitmap_delay: Annotated[
        str | None,
        typer.Option(
            "--bitmap-delay",
            help="Seconds between passes clearing the bitmap bits of quiet regions (default: 5).",
        ),
    ] = None,
    tls_cert: Annotated[
        str | None,
        typer.Option(
            "--tls-cert",
            help="TLS certificate chain (PEM) for NBD_OPT_STARTTLS (default: none, no TLS).",
        ),
    ] = None,
    tls_key: Annotated[
        str | None,
        typer.Option("--tls-key", help="Private key (PEM) of --tls-cert (default: none)."),
    ] = None,
    tls: Annotated[
        str | None,
        typer.Option(
            "--tls",
            help="off, on (for clients that ask) or required (refuse plain clients); "
            "on when --tls-cert is given (default: off without a certificate).",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="Export name (default: raidlab; the empty name works too)."),
    ] = None,
    memory_limit: Annotated[
        str | None,
        typer.Option(
            "--memory-limit",
            help="One budget over all request and reply buffers, e.g. 256M (the default).",
        ),
    ] = None,
    handshake_timeout: Annotated[
        str | None,
        typer.Option("--handshake-timeout", help="Seconds to finish a handshake (default: 10)."),
    ] = None,
    handshakes_max: Annotated[
        str | None,
        typer.Option("--handshakes-max", help="Handshakes at once (default: 64)."),
    ] = None,
    idle_timeout: Annotated[
        str | None,
        typer.Option(
            "--idle-timeout",
            help="Seconds before an idle connection is closed (default: never).",
        ),
    ] = None,
    io_timeout: Annotated[
        str | None,
        typer.Option(
            "--io-timeout",
            help="Seconds a reply (or a started request) may stall (default: 30).",
        ),
    ] = None,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
) -> None:
    """Serve the array over NBD in the foreground; Ctrl-C (or SIGTERM) stops it cleanly.

    Prints the export's URI on stdout once it is ready."""
    with user_errors():
        server = engine.serve(
            _members(members),
            listen=listen,
            connections_max=connections_max,
            log=lambda line: typer.echo(line, err=True),
            journal=journal,
            requests_in_flight=requests_in_flight,
            bitmap_delay_s=bitmap_delay,
            tls_cert=tls_cert,
            tls_key=tls_key,
            tls=tls,
            limits=engine.NbdLimits(
                name=name,
                memory_limit=memory_limit,
                handshake_timeout_s=handshake_timeout,
                handshakes_max=handshakes_max,
                idle_timeout_s=idle_timeout,
                io_timeout_s=io_timeout,
            ),
            cache_members=_cache_members(cache_members),
        )
        forward = {signal.SIGINT, signal.SIGTERM}
        previous = {signum: signal.getsignal(signum) for signum in forward}
        for signum in forward:
            signal.signal(signum, lambda received, _frame: server.send_signal(received))
        try:
            typer.echo(
                f"serving {format_size(server.capacity_bytes)} on {server.uri} "
                f"(control socket {server.control_socket}); Ctrl-C stops",
                err=True,
            )
            typer.echo(server.uri)
            returncode = server.wait()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if returncode == 2:
            raise engine.error_from_stderr(server.stderr)
        if returncode != 0:
            raise typer.Exit(returncode)


def fail(
    target: Annotated[
        str | None, typer.Argument(help="The member to fail: its path or role index.")
    ] = None,
    members: MembersArgument = None,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mark a member failed (online when the array is served); the array runs degraded."""
    with user_errors():
        if target is None:
            raise RaidlabError("TARGET", "the member to fail is needed (a path or a role index)")
        chosen: str | int = int(target) if target.isdigit() else target
        _print_status(
            engine.fail(
                chosen, _members(members), journal, cache_members=_cache_members(cache_members)
            ),
            as_json,
        )


def replace(
    old: Annotated[
        str | None, typer.Argument(help="The member to replace: its path or role index.")
    ] = None,
    new: Annotated[Path | None, typer.Argument(help="The new member file or device.")] = None,
    members: MembersArgument = None,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate", help="Rebuild at most this many bytes/s, e.g. 200M (default: unlimited)."
        ),
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", help="Served arrays: return once the rebuild has started."),
    ] = False,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rebuild a member's role onto NEW, with a progress bar: online (clients keep
    working) when the array is served, offline otherwise."""
    with user_errors():
        if old is None or new is None:
            raise RaidlabError("replace", "OLD NEW MEMBER... needed")
        chosen: str | int = int(old) if old.isdigit() else old
        # Started at the first progress report, so that bad input stays one line.
        bar: Progress | None = None
        task = None

        def advance(done_bytes: int, total_bytes: int) -> None:
            nonlocal bar, task
            if bar is None:
                bar = Progress(
                    TextColumn(f"rebuild onto {new.name}"),
                    BarColumn(bar_width=20),
                    TaskProgressColumn(),
                    DownloadColumn(binary_units=True),
                    TransferSpeedColumn(),
                    TimeRemainingColumn(),
                    console=_stderr,
                )
                bar.start()
                task = bar.add_task("rebuild", total=total_bytes)
            assert task is not None
            bar.update(task, completed=done_bytes, total=total_bytes)

        try:
            result = engine.replace(
                chosen,
                new,
                _members(members),
                rate=rate,
                wait=not no_wait,
                progress=advance,
                journal=journal,
                cache_members=_cache_members(cache_members),
            )
        finally:
            if bar is not None:
                bar.stop()
        _print_status(result, as_json)


def add_spare(
    spare: Annotated[
        Path | None, typer.Argument(help="The file or device to keep as a hot spare.")
    ] = None,
    members: MembersArgument = None,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a hot spare: online when the array is served (a degraded array starts
    rebuilding onto it at once), else recorded in the superblocks."""
    with user_errors():
        if spare is None:
            raise RaidlabError("SPARE", "the spare file or device is needed, then the members")
        _print_status(
            engine.add_spare(
                spare, _members(members), journal, cache_members=_cache_members(cache_members)
            ),
            as_json,
        )


def check(
    members: MembersArgument = None,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """md's check: count stripes whose parity or copies disagree (exit 1 if any)."""
    with user_errors():
        report = engine.check(
            _members(members), journal, cache_members=_cache_members(cache_members)
        )
        _print_scrub(report, as_json, "check")
    if not report.clean:
        raise typer.Exit(1)


def repair(
    members: MembersArgument = None,
    journal: JournalOption = None,
    cache_members: CacheMembersOption = None,
    as_json: JsonOption = False,
) -> None:
    """md's repair: rewrite parity from data and copies from the first copy."""
    with user_errors():
        report = engine.repair(
            _members(members), journal, cache_members=_cache_members(cache_members)
        )
        _print_scrub(report, as_json, "repair")


def attach_cache(
    members: MembersArgument = None,
    cache_members: CacheMembersOption = None,
    cache_policy: Annotated[
        str | None,
        typer.Option("--cache-policy", help="raidix (default), lru, smq or bcache."),
    ] = None,
    cache_size: CacheSizeOption = None,
    cache_region: CacheRegionOption = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Overwrite cache members that carry a raidlab superblock."),
    ] = False,
    journal: JournalOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put a new, empty SSD cache (--cache-members) in front of an array that has none;
    from then on the array needs its --cache-members wherever it is assembled."""
    with user_errors():
        _print_status(
            engine.attach_cache(
                _members(members),
                _cache_members(cache_members) or [],
                cache_policy=cache_policy,
                cache_size=cache_size,
                cache_region=cache_region,
                force=force,
                journal=journal,
            ),
            as_json,
        )


def detach_cache(
    members: MembersArgument = None,
    cache_members: CacheMembersOption = None,
    journal: JournalOption = None,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="The array's superblocks record no cache: one made by a raidlab from "
            "before they did, whose header names the array (only if the array was not "
            "written without it since).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Hand every line of the array's SSD cache (--cache-members) back to the array and
    take the cache away: the array is then used alone, with all its data."""
    with user_errors():
        status = engine.detach_cache(
            _members(members), _cache_members(cache_members) or [], journal=journal, adopt=adopt
        )
        if not as_json:
            typer.echo(
                f"detached cache {status.raw.get('detached_cache_uuid')}: "
                f"{status.raw.get('destaged_bytes')} B destaged"
            )
        _print_status(status, as_json)


def inject(
    member: Annotated[str | None, typer.Argument(help="The member to corrupt or fault.")] = None,
    offset: Annotated[
        str | None, typer.Argument(help="Data byte of the member to corrupt (after its header).")
    ] = None,
    mask: Annotated[
        str | None, typer.Option("--mask", help="Bits to flip (hex; default: 0xff).")
    ] = None,
    read_error: Annotated[
        str | None,
        typer.Option(
            "--read-error",
            help="Served array: reads of OFF[+LEN] fail (LEN default 4K; default: none).",
        ),
    ] = None,
    bad_sector: Annotated[
        str | None,
        typer.Option(
            "--bad-sector",
            help="Served array: reads of OFF[+LEN] fail until written; the array rewrites it "
            "(default: none).",
        ),
    ] = None,
    write_error: Annotated[
        str | None,
        typer.Option(
            "--write-error", help="Served array: writes of OFF[+LEN] fail (default: none)."
        ),
    ] = None,
    latency: Annotated[
        str | None,
        typer.Option(
            "--latency", help="Served array: delay each I/O, e.g. 20ms (default: no delay)."
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Served array: remove the member's faults.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Fault injection for tests: flip bits of one data byte of a member (silent
    corruption, served or not), or give a served member read errors, bad sectors, write
    errors or latency."""
    with user_errors():
        if member is None:
            raise RaidlabError("inject", "MEMBER needed: MEMBER OFFSET [--mask], or a fault flag")
        runtime = any(f is not None for f in (read_error, bad_sector, write_error, latency))
        if runtime or clear:
            if offset is not None or mask is not None:
                raise RaidlabError(
                    "inject",
                    "one of OFFSET [--mask], --read-error, --bad-sector, --write-error, "
                    "--latency, --clear",
                )
            status = engine.inject_fault(
                member,
                read_error=read_error,
                bad_sector=bad_sector,
                write_error=write_error,
                latency=latency,
                clear=clear,
            )
            _print_status(status, as_json)
            return
        if offset is None:
            raise RaidlabError("inject", "MEMBER OFFSET needed (or a fault flag)")
        engine.inject(member, offset, "0xff" if mask is None else mask)


COMMANDS = {
    "create": (create, "raidlab create --level 5 --size 64M a.img b.img c.img d.img"),
    "assemble": (status, "raidlab assemble a.img b.img c.img d.img"),
    "status": (status, "raidlab status --json a.img b.img c.img d.img"),
    "serve": (serve, "raidlab serve --listen 127.0.0.1:10809 a.img b.img c.img d.img"),
    "fail": (fail, "raidlab fail b.img a.img b.img c.img d.img"),
    "replace": (replace, "raidlab replace b.img e.img --rate 200M a.img c.img d.img"),
    "add-spare": (add_spare, "raidlab add-spare e.img a.img b.img c.img d.img"),
    "attach-cache": (
        attach_cache,
        "raidlab attach-cache a.img b.img c.img --cache-members s0.img,s1.img --cache-size 1G",
    ),
    "detach-cache": (
        detach_cache,
        "raidlab detach-cache a.img b.img c.img --cache-members s0.img,s1.img",
    ),
    "check": (check, "raidlab check a.img e.img c.img d.img"),
    "repair": (repair, "raidlab repair a.img e.img c.img d.img"),
    "inject": (
        inject,
        "raidlab inject c.img 100000 --mask 0x01\n  raidlab inject c.img --read-error 1M+64K",
    ),
}


def register(app: typer.Typer) -> None:
    """Add the real-array commands to the ``raidlab`` app."""
    for name, (command, example) in COMMANDS.items():
        app.command(name=name, epilog=f"Example:\n\n\b\n  {example}\n")(command)
