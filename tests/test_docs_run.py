"""The docs cannot drift from the tool: every shell block of README.md and docs/*.md
that names a raidlab command runs here, as a bash script (`set -e`: every command must
succeed). A file's blocks run in order in one scratch directory that holds the
checkout's examples and test data, so a block may use what an earlier one made, as a
reader following the page would. A block that cannot run here is listed in NOT_RUN
with the reason, and that list is checked to name only blocks that exist, so it cannot
hide a block that was renamed.

Selected with `-m docs` (`make test-docs`, part of `make test`): minutes, as the docs
reproduce whole studies.

A transcript block (lines `$ command` followed by what it prints) checks the output:
each printed line must be what the command prints, and a transcript whose output is an
`error: ...` line expects exit status 2.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
DOCS = [CHECKOUT / "README.md", *sorted((CHECKOUT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^\s*(\$ )?(raidlab|raidlab-engine|\$E)\b")

# Blocks not run, by "file:line" of their opening fence, and why.
NOT_RUN: dict[str, str] = {}

# A transcript's line that stands for lines left out ("abridged").
ELLIPSIS = frozenset({"...", "…"})

# Seconds a block may take: the longest documented commands reproduce a whole study.
BLOCK_TIMEOUT_S = 600


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(CHECKOUT)}:{self.line}"

    @property
    def transcript(self) -> bool:
        return any(line.startswith("$ ") for line in self.text.splitlines())


def _blocks() -> list[Block]:
    found = []
    for path in DOCS:
        lines = path.read_text("utf-8").splitlines()
        start = None
        for number, line in enumerate(lines, 1):
            fence = line.strip()
            if start is None and fence.startswith("```"):
                language = fence[3:].strip()
                start = (number, language)
                body: list[str] = []
            elif start is not None and fence.startswith("```"):
                number0, language = start
                text = "\n".join(body) + "\n"
                runnable = language in ("sh", "bash", "console", "")
                if runnable and any(COMMAND.match(b) for b in body):
                    found.append(Block(path, number0, text))
                start = None
            elif start is not None:
                body.append(line)
    return found


BLOCKS = _blocks()


def _scratch(tmp_path: Path) -> Path:
    """A directory with the checkout's examples, test data and reference data, where a
    block's relative paths resolve as they do in the checkout."""
    for name in ("examples", "tests", "data", "benches"):
        (tmp_path / name).symlink_to(CHECKOUT / name)
    return tmp_path


def _environment(cwd: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    state = cwd / ".docs-shell"
    state.mkdir(exist_ok=True)
    return {
        **os.environ,
        STATE_DIR: str(state),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }


# A reader runs a page's blocks in one shell: a variable one block sets (`A="--drive
# ..."`) is there in the next, and so is the directory a block went into. Each block
# (and each command of a transcript) starts where the last one left off: it sources
# the variables the earlier ones created and changes to their last directory, and on
# its way out appends the variables it created and notes where it is.
STATE_DIR = "DOCS_STATE_DIR"
PROLOGUE = f"""set -euo pipefail
[ -f "${STATE_DIR}/variables" ] && source "${STATE_DIR}/variables"
[ -f "${STATE_DIR}/cwd" ] && cd "$(cat "${STATE_DIR}/cwd")"
__docs_before=$(compgen -v)
__docs_exit() {{
  status=$?
  for name in $(compgen -v); do
    case "$name" in __docs_*|status|name|BASH*|FUNCNAME|PIPESTATUS|OLDPWD|PWD|_) continue;; esac
    grep -qx "$name" <<<"$__docs_before" ||
      declare -p "$name" >>"${STATE_DIR}/variables" 2>/dev/null || true
  done
  pwd >"${STATE_DIR}/cwd"
  kill $(jobs -p) 2>/dev/null || true
  return $status
}}
trap __docs_exit EXIT
"""


def _run_script(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = PROLOGUE + block.text
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env=_environment(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _transcript(block: Block) -> list[tuple[str, list[str]]]:
    """(command, the lines shown after it) of each `$ ` line."""
    steps: list[tuple[str, list[str]]] = []
    continued = False
    for line in block.text.splitlines():
        if continued:
            # `$ raidlab run ... \` goes on over the next lines, as in a shell.
            steps[-1] = (steps[-1][0] + "\n" + line, steps[-1][1])
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            steps.append((line[2:], []))
            continued = line.endswith("\\")
        elif steps and line.strip() and line.strip() not in ELLIPSIS:
            steps[-1][1].append(line)
    return steps


def _shows(shown: str, printed: str) -> bool:
    """A transcript's line against a printed one: equal, but for ``...`` in the shown
    line, which stands for any text (a path, a uuid, a pid that differ per run)."""
    shown, printed = shown.rstrip(), printed.rstrip()
    if "..." not in shown:
        return shown == printed
    pattern = ".*".join(re.escape(part) for part in shown.split("..."))
    return re.fullmatch(pattern, printed) is not None


def _check_block(block: Block, cwd: Path) -> None:
    if not block.transcript:
        done = _run_script(block, cwd)
        assert done.returncode == 0, (
            f"{block.id}: exit {done.returncode}\n{block.text}\n"
            f"stdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr[-3000:]}"
        )
        return
    for command, shown in _transcript(block):
        done = _run_script(Block(block.path, block.line, command + "\n"), cwd)
        said = (done.stdout + done.stderr).splitlines()
        expect_error = bool(shown) and shown[0].startswith("error:")
        if expect_error:
            assert done.returncode == 2, f"{block.id}: {command}: exit {done.returncode}"
        else:
            assert done.returncode == 0, f"{block.id}: {command}: {done.stderr[-2000:]}"
        for line in shown:
            assert any(_shows(line, printed) for printed in said), (
                f"{block.id}: {command}: the docs show {line!r}; it printed:\n"
                + "\n".join(said[-40:])
            )


PAGES = sorted({block.path for block in BLOCKS})


@pytest.mark.docs
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(CHECKOUT)))
def test_a_documented_page_runs(page: Path, tmp_path: Path) -> None:
    cwd = _scratch(tmp_path)
    for block in (b for b in BLOCKS if b.path == page):
        if block.id not in NOT_RUN:
            _check_block(block, cwd)


def test_not_run_names_only_blocks_that_exist() -> None:
    assert set(NOT_RUN) <= {block.id for block in BLOCKS}


def test_the_harness_finds_the_documented_commands() -> None:
    # README's quickstart alone has a dozen; a parser that finds none would pass vacuously.
    assert len(BLOCKS) >= 30
    assert shutil.which("bash")
