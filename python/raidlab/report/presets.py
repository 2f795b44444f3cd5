"""Presets as a person or a program reads them: every parameter with its source.

``raidlab presets show NAME`` prints one preset's parameters (subtables such as
``ftl.spare_percent`` and ``reliability.mtbf_hours`` included) with the source each
cites in the preset TOML; ``raidlab presets --format json`` gives the same for every
preset next to its key figures.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from raidlab.report.output import print_json, stdout

# What a parameter without a cited source shows in the table.
NO_SOURCE = "(no source cited)"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:_}"
    return str(value)


def print_preset_details(details: Sequence[Mapping[str, Any]], output_format: str) -> None:
    """``presets show``: one table per preset (table), its rows (csv), or the dicts of
    :func:`raidlab.api.preset_details` (json)."""
    if output_format == "json":
        print_json({"presets": list(details)})
        return
    if output_format == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["group", "name", "parameter", "value", "source"])
        for entry in details:
            for row in entry["parameters"]:
                writer.writerow(
                    [entry["group"], entry["name"], row["parameter"], row["value"], row["source"]]
                )
        return
    for entry in details:
        kind = f" ({entry['kind']})" if entry["kind"] else ""
        where = f", {entry['file']}" if entry.get("file") else ""
        # Text, not markup: sources cite TOML tables such as [array.drive.ftl].
        table = Table(title=Text(f"{entry['group']} preset {entry['name']}{kind}{where}"))
        table.add_column("parameter", overflow="fold")
        table.add_column("value", justify="right", overflow="fold")
        table.add_column("source", overflow="fold")
        for row in entry["parameters"]:
            table.add_row(
                Text(row["parameter"]),
                Text(_value_text(row["value"])),
                Text(row["source"] or NO_SOURCE),
            )
        stdout.print(entry["description"], highlight=False, markup=False)
        stdout.print(table)
        for note in entry["notes"]:
            stdout.print(f"  # {note}", highlight=False, markup=False)
