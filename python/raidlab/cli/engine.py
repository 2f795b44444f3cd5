"""``raidlab create/assemble/status/serve/fail/replace/add-spare/check/repair/inject/
attach-cache/detach-cache/replace-cache``: real arrays.

These commands drive the real-data engine (the ``raidlab-engine`` binary) through
:mod:`raidlab.engine`; the simulating commands live in :mod:`raidlab.cli`, which
registers these with :func:`register`. Their arguments, help and defaults are not
written here: each command is built from the engine's flag table
(``raidlab.engine.flag_table``, exported from its clap definitions) the first time it
is run or its help is shown, so ``raidlab --version`` and the simulating commands never
load it. Options are text, passed on to the engine, which names the flag in its errors;
bad input prints one line ``error: <field>: <what is allowed>`` and exits with status
2, as every raidlab command does. What stays here is the rendering (tables, the rebuild
progress bar) and serve's signal forwarding.
"""

from __future__ import annotations

import functools
import inspect
import json
import signal
import sys
from collections.abc import Callable, Mapping
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
from typer.core import TyperCommand

from raidlab import engine
from raidlab.errors import user_errors
from raidlab.units import format_size

_stdout = Console(soft_wrap=True, highlight=False)
_stderr = Console(stderr=True, soft_wrap=True, highlight=False)


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
        if member.bad_blocks:
            ranges = " ".join(f"{offset}+{length}" for offset, length in member.bad_blocks)
            state += f" (bad blocks: {ranges})"
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
    if report.unresolved_stripes:
        ranges = " ".join(f"{offset}+{length}" for offset, length in report.unresolved)
        typer.echo(
            f"unresolved {report.unresolved_stripes}: nothing tells which block is right; "
            f"logical bytes {ranges}"
        )
    if report.unreadable_stripes:
        typer.echo(f"unreadable {report.unreadable_stripes}: bad blocks, see status")


# ------------------------------------------------------------- what each command does
#
# Every runner gets the options typer parsed, keyed by the engine's argument ids, and
# `json`: whether the user asked for the engine's report as it is.

Options = dict[str, Any]


def _run_status(command: str, options: Options, as_json: bool) -> None:
    """Commands whose report is the array's status."""
    document = engine.run_report(command, options)
    if document is None:
        return  # inject's bit flip reports nothing
    status = engine.ArrayStatus.from_json(document)
    if command == "detach-cache" and not as_json:
        typer.echo(
            f"detached cache {status.raw.get('detached_cache_uuid')}: "
            f"{status.raw.get('destaged_bytes')} B destaged"
        )
    _print_status(status, as_json)


def _run_scrub(command: str, options: Options, as_json: bool) -> None:
    """check and repair: the scrub report; check exits 1 when any stripe mismatched,
    repair when it left stripes unresolved."""
    report = engine.ScrubReport.from_json(engine.run_report(command, options))
    _print_scrub(report, as_json, command)
    if (command == "check" and not report.clean) or report.unresolved_stripes:
        raise typer.Exit(1)


def _run_replace(command: str, options: Options, as_json: bool) -> None:
    """replace, with a progress bar started at the first progress report, so that bad
    input stays one line."""
    bar: Progress | None = None
    task = None
    new_name = Path(str(options.get("new") or "")).name

    def advance(done_bytes: int, total_bytes: int) -> None:
        nonlocal bar, task
        if bar is None:
            bar = Progress(
                TextColumn(f"rebuild onto {new_name}"),
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
        result = engine.run_replace(options, progress=advance)
    finally:
        if bar is not None:
            bar.stop()
    _print_status(result, as_json)


def _run_serve(command: str, options: Options, as_json: bool) -> None:
    """serve in the foreground: the URI on stdout once ready; SIGINT and SIGTERM are
    passed on to the engine, which flushes and marks the array clean."""
    members = options.pop("members", None) or []
    server = engine.serve(members, options, log=lambda line: typer.echo(line, err=True))
    forward = {signal.SIGINT, signal.SIGTERM}
    previous = {signum: signal.getsignal(signum) for signum in forward}
    for signum in forward:
        signal.signal(signum, lambda received, _frame: server.send_signal(received))
    try:
        uris = [u for u in (server.address and server.uri, server.unix_uri) if u]
        typer.echo(
            f"serving {format_size(server.capacity_bytes)} on {' and '.join(uris)} "
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


Runner = Callable[[str, Options, bool], None]

# name: (the engine's command, what runs it, an example for --help). `assemble` is the
# engine's alias of status.
COMMANDS: dict[str, tuple[str, Runner, str]] = {
    "create": (
        "create",
        _run_status,
        "raidlab create --level 5 --stripe-unit 64K --size 64M a.img b.img c.img d.img",
    ),
    "assemble": ("status", _run_status, "raidlab assemble a.img b.img c.img d.img"),
    "status": ("status", _run_status, "raidlab status --json a.img b.img c.img d.img"),
    "serve": (
        "serve",
        _run_serve,
        "raidlab serve --listen 127.0.0.1:10809 a.img b.img c.img d.img",
    ),
    "fail": ("fail", _run_status, "raidlab fail b.img a.img b.img c.img d.img"),
    "replace": (
        "replace",
        _run_replace,
        "raidlab replace b.img e.img --rate 200M a.img c.img d.img",
    ),
    "add-spare": ("add-spare", _run_status, "raidlab add-spare e.img a.img b.img c.img d.img"),
    "attach-cache": (
        "attach-cache",
        _run_status,
        "raidlab attach-cache a.img b.img c.img --cache-members s0.img,s1.img --cache-size 1G",
    ),
    "detach-cache": (
        "detach-cache",
        _run_status,
        "raidlab detach-cache a.img b.img c.img --cache-members s0.img,s1.img",
    ),
    "replace-cache": (
        "replace-cache",
        _run_status,
        "raidlab replace-cache s2.img a.img b.img c.img --cache-members s0.img",
    ),
    "check": ("check", _run_scrub, "raidlab check a.img e.img c.img d.img"),
    "repair": ("repair", _run_scrub, "raidlab repair a.img e.img c.img d.img"),
    "inject": (
        "inject",
        _run_status,
        "raidlab inject c.img 100000 --mask 0x01\n  raidlab inject c.img --read-error 1M+64K",
    ),
}


# -------------------------------------------------- commands built from the flag table


def _help(arg: Mapping[str, Any]) -> str:
    """The engine's help of an argument; a required option says so (the engine, not
    click, refuses it missing, in its one-line form)."""
    text = " ".join(str(arg["help"] or "").split())
    if arg["required"] and not arg["positional"]:
        text += " (required)"
    return text


def _parameter(arg: Mapping[str, Any]) -> inspect.Parameter:
    """One typer parameter for one of the engine's arguments, its default the engine's."""
    names = [f"--{name}" for name in [arg["long"], *arg["aliases"]] if name]
    metavar = arg["value_names"][0] if arg["value_names"] else None
    default: Any
    if arg["positional"]:
        # Optional here, so that a missing one gets the engine's one-line error
        # instead of click's multi-line usage text.
        kind: Any = list[str] | None if arg["repeated"] else str | None
        info: Any = typer.Argument(help=_help(arg), metavar=metavar, show_default=False)
        default = None
    elif not arg["takes_value"]:
        kind, default = bool, False
        info = typer.Option(*names, help=_help(arg))
    else:
        # A repeatable option (--force-overwrite FILE ...) keeps every value given.
        repeated = arg["repeated"] and not arg["value_delimiter"]
        kind = list[str] | None if repeated else str | None
        default = arg["defaults"][0] if arg["defaults"] else None
        info = typer.Option(
            *names, help=_help(arg), metavar=metavar, show_default=default is not None
        )
    return inspect.Parameter(
        arg["id"], inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


@functools.cache
def build_command(name: str) -> TyperCommand:
    """The click command of ``raidlab NAME``: the engine's arguments of its command,
    parsed by typer and passed on to the runner."""
    command, runner, example = COMMANDS[name]
    table = engine.flag_table()[command]

    def callback(**options: Any) -> None:
        as_json = bool(options.get("json"))
        with user_errors():
            runner(command, options, as_json)

    parameters = [_parameter(arg) for arg in table["args"]]
    callback.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    callback.__annotations__ = {p.name: p.annotation for p in parameters}
    callback.__doc__ = table["long_about"] or table["about"]
    # As the raidlab app: no rich markup, tracebacks never shown (help option names
    # come from the parent context).
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    app.command(name=name, epilog=f"Example:\n\n\b\n  {example}\n")(callback)
    built = typer.main.get_command(app)
    assert isinstance(built, TyperCommand), built
    return built


class _EngineCommand(TyperCommand):
    """A placeholder in the ``raidlab`` app for :func:`build_command`'s command, which
    it builds (loading the native module) only when it is run or its help is read."""

    @property
    def params(self) -> list[Any]:  # type: ignore[override]
        return build_command(str(self.name)).params if self.name else []

    @params.setter
    def params(self, _value: list[Any]) -> None:
        pass  # typer's own (empty) parameters: the built command's are used

    @property
    def help(self) -> str | None:  # type: ignore[override]
        return build_command(str(self.name)).help if self.name else None

    @help.setter
    def help(self, _value: str | None) -> None:
        pass

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        return build_command(str(self.name)).make_context(info_name, args, parent=parent, **extra)


def _placeholder() -> None:
    """Replaced by the command built from the engine's flag table."""


def register(app: typer.Typer) -> None:
    """Add the real-array commands to the ``raidlab`` app."""
    for name in COMMANDS:
        app.command(name=name, cls=_EngineCommand)(_placeholder)
