"""A ``Report`` as one self-contained HTML page: inline CSS, a few lines of inline
script (sortable tables, the log y-axis switch), SVG figures. Nothing is fetched at
view time, and the same report gives the same bytes (no timestamp)."""

from __future__ import annotations

import base64
import json
from html import escape
from typing import Any

from raidlab.report.html.model import Cell, Figure, Report, Section, Table
from raidlab.version import __version__

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1500px;
  padding: 1em 2em; color: #222; }
h1 { font-size: 1.5em; margin: .2em 0; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.subtitle { color: #555; margin: 0 0 1em; }
.headline { display: flex; flex-wrap: wrap; gap: .8em; margin: 1em 0; }
.card { border: 1px solid #ccc; border-radius: 6px; padding: .5em .9em; min-width: 10em; }
.card .label { color: #555; font-size: .85em; }
.card .value { font-size: 1.35em; font-weight: 600; }
.card .note { color: #666; font-size: .8em; }
.controls { position: sticky; top: 0; background: #fffc; padding: .3em 0; z-index: 1; }
figure { margin: 1.2em 0; } figcaption { font-weight: 600; margin-bottom: .3em; }
figure .caption { color: #555; font-size: .9em; }
.panels { display: grid; grid-template-columns: repeat(2, minmax(0, 460px)); gap: .4em 1.2em; }
.panels svg { max-width: 100%; height: auto; }
.panels.wide { grid-template-columns: minmax(0, 700px); }
body.log-y .linear-y, body:not(.log-y) .log-y-only { display: none; }
table { border-collapse: collapse; margin: .6em 0 1.4em; font-size: .9em; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border: 1px solid #ddd; padding: .2em .6em; } td.num, th.num { text-align: right; }
th { background: #f3f3f3; cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort=ascending]::after { content: " \\25B2"; }
th[aria-sort=descending]::after { content: " \\25BC"; }
td.pass { color: #0072B2; font-weight: 600; } td.fail { color: #D55E00; font-weight: 600; }
td.suspect { background: #f7f1e3; font-style: italic; }
pre { background: #f6f6f6; padding: .6em; overflow: auto; max-height: 30em;
      white-space: pre-wrap; overflow-wrap: anywhere; }
.lines p { margin: .2em 0; }
"""

# Sort a table by the clicked header (numbers numerically, blanks last), and switch
# figures between a linear and a log y axis.
SCRIPT = """
"use strict";
function sortTable(th) {
  const table = th.closest("table"), body = table.tBodies[0];
  const index = Array.prototype.indexOf.call(th.parentNode.children, th);
  const numeric = th.classList.contains("num");
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const key = row => {
    const value = row.cells[index].dataset.sort;
    if (value === undefined || value === "") return null;
    return numeric ? parseFloat(value) : value;
  };
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    if (x === null || y === null) return (x === null) - (y === null);
    const order = numeric ? x - y : String(x).localeCompare(String(y));
    return ascending ? order : -order;
  });
  rows.forEach(row => body.appendChild(row));
}
document.querySelectorAll("table.sortable th").forEach(th =>
  th.addEventListener("click", () => sortTable(th)));
const logSwitch = document.getElementById("log-y");
if (logSwitch) {
  const apply = () => document.body.classList.toggle("log-y", logSwitch.checked);
  logSwitch.addEventListener("change", apply);
  apply();
}
document.body.dataset.ready = "yes";
"""


def render(report: Report, log_y: bool = False) -> str:
    """The page of ``report``; ``log_y`` starts its figures on a log y axis."""
    has_log = any(figure.log_svgs for section in report.sections for figure in section.figures)
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<meta name='generator' content='raidlab {escape(__version__)}'>",
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head>",
        f"<body class='kind-{escape(report.kind)}{' log-y' if log_y and has_log else ''}'>",
        f"<h1>{escape(report.title)}</h1>",
        f"<p class='subtitle'>{escape(report.subtitle)}</p>",
        _headline(report),
    ]
    if has_log:
        parts.append(
            "<div class='controls'><label><input type='checkbox' id='log-y'"
            f"{' checked' if log_y else ''}> log y-axis (MB/s panels)</label></div>"
        )
    parts.extend(_section(section) for section in report.sections)
    parts.append(_repeat(report))
    parts.append(
        f"<footer class='subtitle'>raidlab {escape(__version__)} "
        f"report ({escape(report.kind)})</footer>"
    )
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "\n".join(parts)


def _headline(report: Report) -> str:
    cards = "".join(
        f"<div class='card'><div class='label'>{escape(item.label)}</div>"
        f"<div class='value'>{escape(item.value)}</div>"
        + (f"<div class='note'>{escape(item.note)}</div>" if item.note else "")
        + "</div>"
        for item in report.headline
    )
    return f"<section class='headline'>{cards}</section>"


def _section(section: Section) -> str:
    parts = [f"<section><h2>{escape(section.heading)}</h2>"]
    if section.lines:
        parts.append(
            "<div class='lines'>"
            + "".join(f"<p>{escape(line)}</p>" for line in section.lines)
            + "</div>"
        )
    parts.extend(_figure(figure) for figure in section.figures)
    parts.extend(_table(table) for table in section.tables)
    parts.append("</section>")
    return "".join(parts)


def _figure(figure: Figure) -> str:
    cells = []
    for index, svg in enumerate(figure.svgs):
        if index < len(figure.log_svgs):
            cells.append(
                f"<div class='panel'><div class='linear-y'>{svg}</div>"
                f"<div class='log-y-only'>{figure.log_svgs[index]}</div></div>"
            )
        else:
            cells.append(f"<div class='panel'>{svg}</div>")
    caption = f"<div class='caption'>{escape(figure.caption)}</div>" if figure.caption else ""
    return (
        f"<figure><figcaption>{escape(figure.title)}</figcaption>{caption}"
        f"<div class='panels{' wide' if len(cells) == 1 else ''}'>{''.join(cells)}</div></figure>"
    )


def _class_attribute(*names: str) -> str:
    css = " ".join(name for name in names if name)
    return f" class='{css}'" if css else ""


def _cell(cell: Cell, numeric: bool) -> str:
    sort = "" if cell.sort is None else escape(repr(cell.sort) if numeric else str(cell.sort))
    return (
        f"<td{_class_attribute('num' if numeric else '', cell.css)} data-sort='{sort}'>"
        f"{escape(cell.text)}</td>"
    )


def _table(table: Table) -> str:
    numeric = [column in table.numeric for column in table.columns]
    head = "".join(
        f"<th{_class_attribute('num' if is_numeric else '')} title='click to sort'>"
        f"{escape(column)}</th>"
        for column, is_numeric in zip(table.columns, numeric, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(_cell(cell, is_numeric) for cell, is_numeric in zip(row, numeric, strict=True))
        + "</tr>"
        for row in table.rows
    )
    return (
        f"<table class='sortable'><caption>{escape(table.title)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _repeat(report: Report) -> str:
    parts = ["<section><h2>Repeat it</h2>"]
    if report.command:
        parts.append(f"<p>The command that produced it:</p><pre>{escape(report.command)}</pre>")
    else:
        parts.append("<p>The command line was not recorded in the input.</p>")
    if report.repeat_note:
        parts.append(f"<pre>{escape(report.repeat_note)}</pre>")
    for name, document in report.repeat_documents.items():
        parts.append(_document(name, document))
    parts.append("</section>")
    return "".join(parts)


def _document(name: str, document: Any) -> str:
    text = json.dumps(document, indent=2, sort_keys=True)
    data = base64.b64encode(text.encode()).decode()
    return (
        f"<details><summary>{escape(name)}.json (click to show; "
        f"<a download='{escape(name)}.json' href='data:application/json;base64,{data}'>"
        f"save</a>)</summary><pre>{escape(text)}</pre></details>"
    )
