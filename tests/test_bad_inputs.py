"""Bad input to every command: one line ``error: <field>: ...`` on stderr naming the
field, exit status 2, nothing on stdout, no traceback, and no file created or changed.

The cases are data, tests/data/bad_inputs.tsv: ``FIELD<TAB>ARGS`` a line, ARGS split as
a shell would (``shlex``), ``{name}`` standing for one of the files :func:`inputs`
makes (a binary file, a directory, a trace whose time runs backwards, the members of a
real array, ...). Each runs in this process through the console script's ``main``
(a subprocess per case would take minutes), grouped by command so a failure lists
every case of the command that went wrong.
"""

from __future__ import annotations

import io
import random
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from raidlab.cli import main

CORPUS = Path(__file__).parent / "data" / "bad_inputs.tsv"
# The corpus is meant to cover every command and to stay large.
CASES_MIN = 300


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` (placeholders unresolved) and the field its error names."""

    line: int
    field: str
    argv: tuple[str, ...]

    @property
    def command(self) -> str:
        return self.argv[0] if self.argv else ""


def load_cases(path: Path = CORPUS) -> list[Case]:
    cases = []
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if not text.strip() or text.startswith("#"):
            continue
        field, args = text.split("\t", 1)
        cases.append(Case(number, field, tuple(shlex.split(args))))
    return cases


CASES = load_cases()
COMMANDS = sorted({case.command for case in CASES})


def _write_inputs(root: Path) -> dict[str, Path]:
    """The files the corpus names, in ``root``."""
    files = {
        "garbage": root / "garbage.bin",
        "notes": root / "notes.txt",
        "empty": root / "empty.txt",
        "dir": root / "adir",
        "missing": root / "no-such-file",
        "msr": root / "ok.msr.csv",
        "blk": root / "ok.blkparse.txt",
        "backwards_msr": root / "backwards.msr.csv",
        "backwards_blk": root / "backwards.blkparse.txt",
        "wrap_msr": root / "wrap.msr.csv",
        "wrap_blk": root / "wrap.blkparse.txt",
        "job": root / "job.fio",
        "sweep": root / "sweep.toml",
        "config": root / "array.toml",
        "json": root / "not-a-result.json",
    }
    # Bytes that are not UTF-8 (0xff, lone continuation bytes), from a fixed seed.
    generator = random.Random(34)
    files["garbage"].write_bytes(b"\xff\xfe\x80" + generator.randbytes(4093))
    files["notes"].write_text("these are notes, not an input of raidlab\n")
    files["empty"].write_text("")
    files["dir"].mkdir()
    msr = "".join(f"{1000 + 10 * i},h,0,Read,{4096 * i},4096,1\n" for i in range(20))
    files["msr"].write_text(msr)
    files["backwards_msr"].write_text(msr + "990,h,0,Write,0,4096,1\n")
    files["wrap_msr"].write_text(msr + "2000,h,0,Read,9223372036854775807,4096,1\n")
    blk = "".join(f"8,0 0 {i + 1} 0.{i:03d} 1 Q R {8 * i} + 8 [fio]\n" for i in range(20))
    files["blk"].write_text(blk)
    files["backwards_blk"].write_text(blk + "8,0 0 99 0.0005 1 Q W 0 + 8 [fio]\n")
    files["wrap_blk"].write_text(blk + "8,0 0 99 0.5 1 Q R 36028797018963968 + 8 [fio]\n")
    files["job"].write_text("[job]\nrw=randread\nbs=4k\niodepth=4\nsize=64m\nio_size=1m\n")
    files["sweep"].write_text(
        '[array]\ndrive = "intel-dc-s3500-80g"\n[workload]\nrw = "randread"\nios = 500\n'
        '[grid]\n"array.drives" = [1, 2]\n'
    )
    files["config"].write_text('[array]\ndrive = "intel-dc-s3500-80g"\ndrives = 2\n')
    files["json"].write_text('{"not": "a raidlab result"}\n')
    return files


def _make_array(root: Path) -> dict[str, Path]:
    """A real RAID 5 of three member files (``a``, ``b``, ``c``) and a file ``e`` of
    the member size that is in no array, for the engine's commands."""
    members = {name: root / f"{name}.img" for name in "abc"}
    code, _, stderr = run_main(
        ["create", "--level", "5", "--size", "8M", *map(str, members.values())]
    )
    assert code == 0, stderr
    other = root / "e.img"
    other.write_bytes(b"\0" * (8 << 20))
    return {**members, "e": other}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-inputs")
    return {**_write_inputs(root), **_make_array(root)}


@contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        sys.stdout, sys.stderr = saved


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """``raidlab ARGV`` in this process: (exit status, stdout, stderr)."""
    with _captured() as (out, err):
        try:
            main(argv)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException as error:  # a traceback the user would have seen
            import traceback

            traceback.print_exception(error, file=err)
            code = -1
    return code, out.getvalue(), err.getvalue()


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file's size and modification time, every directory's existence (a file made
    and removed again by a refused command leaves only the directory's time changed)."""
    return {
        str(path.relative_to(root)): (0, 0)
        if path.is_dir()
        else (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(root.rglob("*"))
    }


def _resolve(argv: tuple[str, ...], inputs: dict[str, Path]) -> list[str]:
    names = {name: str(path) for name, path in inputs.items()}
    return [arg.format(**names) if "{" in arg else arg for arg in argv]


def _what_is_wrong(
    case: Case, field: str, code: int, stdout: str, stderr: str, changed: bool
) -> str:
    lines = stderr.strip().splitlines()
    wrong = []
    if code != 2:
        wrong.append(f"exit {code}")
    if len(lines) != 1:
        wrong.append(f"{len(lines)} lines on stderr")
    elif not lines[0].startswith(f"error: {field}"):
        wrong.append(f"does not start 'error: {field}'")
    if stdout:
        wrong.append("output on stdout")
    if "Traceback" in stderr:
        wrong.append("a traceback")
    if changed:
        wrong.append("files created or changed")
    if not wrong:
        return ""
    said = " | ".join(lines[-3:])
    return f"line {case.line}: raidlab {shlex.join(case.argv)}: {', '.join(wrong)}: {said}"


def test_the_corpus_is_large_and_covers_every_command() -> None:
    assert len(CASES) >= CASES_MIN
    from raidlab.cli import app

    registered = {
        command.name or command.callback.__name__.replace("_", "-")
        for command in app.registered_commands
        if command.callback is not None
    }
    assert registered <= set(COMMANDS), registered - set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_bad_input_is_one_line_naming_the_field_exit_2_and_touches_nothing(
    command: str,
    inputs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # where outputs with a default path would land
    files = inputs["garbage"].parent
    wrong = []
    for case in (case for case in CASES if case.command == command):
        before = _snapshot(files), _snapshot(tmp_path)
        code, stdout, stderr = run_main(_resolve(case.argv, inputs))
        changed = (_snapshot(files), _snapshot(tmp_path)) != before
        field = _resolve((case.field,), inputs)[0]
        problem = _what_is_wrong(case, field, code, stdout, stderr, changed)
        if problem:
            wrong.append(problem)
    assert not wrong, "\n".join(wrong)


# --- nonsense that was accepted: each refused by name, or given a meaning ---------------


def _one_error_line(argv: list[str]) -> str:
    code, stdout, stderr = run_main(argv)
    lines = stderr.strip().splitlines()
    assert (code, stdout, len(lines)) == (2, "", 1), (code, stdout, stderr)
    return lines[0]


def test_calibrate_job_file_refuses_a_size_below_one_block_of_its_jobs() -> None:
    for size in ("0", "1k", "512k"):
        line = _one_error_line(["calibrate", "--print-jobs", "--size", size])
        assert line.startswith("error: --size: must be at least 1m"), line
    code, stdout, _ = run_main(["calibrate", "--print-jobs", "--size", "1m"])
    assert code == 0 and "\nsize=1m\n" in stdout


def test_risk_refuses_a_rebuild_of_no_time_at_every_level(no_simulation: None) -> None:
    for level, drives in (("5", "4"), ("0", "2")):
        line = _one_error_line(
            ["risk", "--drive", "wd-caviar-blue-500g", "--level", level, "--drives", drives]
            + ["--rebuild-hours", "0"]
        )
        assert line.startswith("error: --rebuild-hours: must be more than 0"), line


def test_advise_refuses_one_drive_before_simulating(no_simulation: None) -> None:
    line = _one_error_line(["advise", "--drive", "intel-dc-s3500-80g", "--drives", "1"])
    assert line.startswith("error: --drives: advise chooses a RAID level"), line


@pytest.mark.parametrize("out", ["results/", "results"])
def test_sweep_out_naming_a_directory_writes_inside_it(
    out: str, inputs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    if not out.endswith("/"):
        (tmp_path / out).mkdir()  # an existing directory, named without the slash
    code, _, stderr = run_main(["sweep", str(inputs["sweep"]), "--out", out, "--jobs", "1"])
    assert code == 0, stderr
    written = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*.*"))
    assert written == ["results/sweep.csv", "results/sweep.parquet"], written


def test_replay_refuses_a_trace_running_backwards_or_past_2_63_by_line(
    inputs: dict[str, Path],
) -> None:
    drive = ["--drive", "intel-dc-s3500-80g"]
    for name, says in (
        ("backwards_msr", "trace line 21: time goes backwards, 20000 ns before line 20's"),
        ("wrap_msr", "trace line 21: offset 9223372036854775807 + length 4096 bytes"),
    ):
        line = _one_error_line(["replay", str(inputs[name]), *drive])
        assert line.startswith(f"error: {inputs[name]}: {says}"), line


def test_replay_names_output_format_for_a_bad_report_format(inputs: dict[str, Path]) -> None:
    argv = ["replay", str(inputs["msr"]), "--output-format", "xml", "--drive", "intel-dc-s3500-80g"]
    assert _one_error_line(argv).startswith("error: --output-format: must be one of")


def test_replace_refuses_a_healthy_member_rebuilt_onto_itself(inputs: dict[str, Path]) -> None:
    members = [str(inputs[name]) for name in "abc"]
    before = [inputs[name].read_bytes() for name in "abc"]
    line = _one_error_line(["replace", members[1], members[1], *members])
    assert line.startswith(f"error: NEW: {members[1]} is the array member"), line
    assert [inputs[name].read_bytes() for name in "abc"] == before
