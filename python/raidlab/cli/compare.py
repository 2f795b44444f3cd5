"""``raidlab compare``: two runs side by side, and why they differ."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from raidlab.cli.flags import FORMAT, check_format, flagset
from raidlab.cli.root import app
from raidlab.errors import user_errors
from raidlab.report.compare import comparison, load_run
from raidlab.report.output import print_json, stdout
from raidlab.report.tables import print_table


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return str(value)


def _change(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f} %"


@app.command(
    epilog="""Examples:

\b
  raidlab run --drive adata-sp900-128g --drives 2 --controller intel-h97-rst \\
      --iodepth 32 --format json > a.json
  raidlab run --drive adata-sp900-128g --drives 4 --controller intel-h97-rst \\
      --iodepth 32 --format json > b.json
  raidlab compare a.json b.json
  raidlab compare scenario-a.json scenario-b.json   # scenarios: simulated, then compared
"""
)
@flagset(FORMAT)
def compare(
    a: Annotated[
        str,
        typer.Argument(
            metavar="A",
            help="A `raidlab run --format json` result, or a scenario (its `scenario`, "
            "as the report's Repeat-it block saves it), simulated first.",
        ),
    ],
    b: Annotated[str, typer.Argument(metavar="B", help="Another one, compared with A.")],
    *,
    output_format: str,
) -> None:
    """Two runs (or two scenarios, simulated first) side by side: what differs in
    their scenarios, each figure and its change, and why (what bound each run, the
    time per stage of an I/O's path)."""
    with user_errors():
        output_format = check_format(output_format)
        from raidlab import api  # the simulator, for a scenario given as A or B

        doc = comparison(load_run(a, "A", api.run_scenario), load_run(b, "B", api.run_scenario))
        if output_format == "json":
            print_json(doc)
            return
        if output_format == "csv":
            sys.stdout.write("op,metric,a,b,change_pct\n")
            for row in doc["figures"]:
                cells = [row["op"], row["metric"], row["a"], row["b"], row["change_pct"]]
                sys.stdout.write(",".join("" if c is None else str(c) for c in cells) + "\n")
            return
        changes = doc["changes"] or [{"field": "(none)", "a": "", "b": ""}]
        print_table(
            (
                ["scenario field", "A", "B"],
                [[c["field"], str(c["a"]), str(c["b"])] for c in changes],
            ),
            title="what differs",
        )
        print_table(
            (
                ["op", "metric", "A", "B", "change"],
                [
                    [
                        r["op"],
                        r["metric"],
                        _number(r["a"]),
                        _number(r["b"]),
                        _change(r["change_pct"]),
                    ]
                    for r in doc["figures"]
                ],
            ),
            title="figures",
        )
        print_table(
            (
                ["stage", "A us", "B us", "change"],
                [
                    [r["stage"], _number(r["a_us"]), _number(r["b_us"]), _change(r["change_pct"])]
                    for r in doc["stages"]
                ],
            ),
            title="time per I/O by stage",
        )
        for line in doc["why"]:
            stdout.print(line, highlight=False, markup=False)
