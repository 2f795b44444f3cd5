"""``raidlab report``: a command's JSON output as one self-contained HTML page.

``readers`` recognises the input and builds a ``model.Report`` (``kinds`` holds what
each kind of input becomes), ``charts`` and ``svg`` draw its figures, ``page``
renders it. No pandas and no plotting library: the page is plain text built from
the JSON, so it is the same bytes for the same input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report.html.model import Report
from raidlab.report.html.page import render
from raidlab.report.html.readers import load_input, read_document
from raidlab.report.output import output_file


def build_report(document: Any, title: str | None = None) -> Report:
    """The report of a command's JSON ``document`` (``title`` replaces its own)."""
    report = read_document(document)
    if title:
        report.title = title
    return report


def write_report(
    input_path: str | Path,
    out: str | Path,
    title: str | None = None,
    log_y: bool = False,
    label: str = "--out",
) -> Report:
    """Read ``input_path`` (a path or ``-``), write its page to ``out`` (checked
    before anything is read), and return the report."""
    out = output_file(out, label)
    report = build_report(load_input(input_path), title)
    try:
        out.write_text(render(report, log_y=log_y), encoding="utf-8")
    except OSError as error:
        raise RaidlabError(label, f"cannot write {out}: {error.strerror or error}") from None
    return report


__all__ = ["Report", "build_report", "render", "write_report"]
