"""A real browser for the tests: headless Chromium (Debian package `chromium`, which
`make tools` installs) loads a page from disk, and we keep the DOM after its scripts
ran, every console message and a screenshot.

Chromium prints console messages on stderr with `--enable-logging=stderr --v=0` as
``...:INFO:CONSOLE:12] "Uncaught ReferenceError: ...", source: file:///... (12)``;
a report logs nothing, so any such line is a failure.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# A loaded machine (8 agents on 2 cores) takes ~20 s to start Chromium.
LOAD_TIMEOUT_S = 240
CONSOLE_LINE = re.compile(r":CONSOLE[(:]")


def chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass(frozen=True)
class PageLoad:
    dom: str
    console: list[str]
    screenshot: Path | None


def load_page(
    page: Path, screenshot: Path | None = None, window: tuple[int, int] = (1300, 2400)
) -> PageLoad:
    """Load ``page`` (a file) in headless Chromium; ``screenshot`` saves a PNG."""
    binary = chromium()
    assert binary is not None, "no chromium (apt-get install chromium)"
    with tempfile.TemporaryDirectory(prefix="raidlab-chromium-") as profile:
        command = [
            binary,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={window[0]},{window[1]}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ]
        if screenshot is not None:
            command.append(f"--screenshot={screenshot}")
        done = subprocess.run(
            [*command, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=LOAD_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if CONSOLE_LINE.search(line)]
    console += [
        line for line in done.stderr.splitlines() if "Uncaught" in line and line not in console
    ]
    return PageLoad(done.stdout, console, screenshot)


class SvgCensus(HTMLParser):
    """How many ``<svg>`` elements a DOM has and how many marks each holds."""

    MARKS = frozenset({"path", "circle", "rect", "polyline", "line"})

    def __init__(self) -> None:
        super().__init__()
        self.marks_per_svg: list[int] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "svg":
            self.marks_per_svg.append(0)
            self._depth += 1
        elif self._depth and tag in self.MARKS:
            self.marks_per_svg[-1] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "svg":
            self._depth -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._depth -= 1


def svg_marks(dom: str) -> list[int]:
    census = SvgCensus()
    census.feed(dom)
    return census.marks_per_svg
