"""Study reports: measured vs simulated rows with MAPE, and claims checked."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from raidlab.report.output import print_json, records, stderr, stdout
from raidlab.report.tables import number
from raidlab.studies.atto_studies import StudySummary
from raidlab.studies.claims import Tolerance
from raidlab.studies.cross_validation import CrossValidation, Refit
from raidlab.units import format_size

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd


def print_claims(frame: pd.DataFrame, output_format: str) -> None:
    """A claim study as a table (checks, then claims not covered), CSV (every row;
    method and summary on stderr) or JSON."""
    if output_format == "json":
        print_json(
            {
                "study": frame.attrs["study"],
                "title": frame.attrs["title"],
                "method": frame.attrs["method"],
                "seed": frame.attrs["seed"],
                "ios": frame.attrs["ios"],
                "records": records(frame),
                "coverage": frame.attrs["coverage"],
                "summary": frame.attrs["summary"],
            }
        )
        return
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        print_claims_summary(frame, stderr)
        return
    checks = frame[frame["result"] != "not covered"]
    table = Table(title=f"{frame.attrs['study']}: claimed vs simulated")
    for column in ("claim", "variant", "claim (config; metric; condition)", "claimed"):
        table.add_column(column, justify="right" if column == "claimed" else "left")
    for column in ("simulated", "tolerance", "result"):
        table.add_column(column, justify="right" if column == "simulated" else "left")
    for row in checks.itertuples():
        table.add_row(
            row.claim_id,
            row.variant,
            f"{row.config}; {row.metric}; {row.condition}",
            claimed_cell(row.claimed, row.claimed_text, row.unit),
            f"{claim_number(row.simulated)} {simulated_unit(row.tolerance_kind, row.unit)}",
            row.tolerance_text
            or Tolerance(row.tolerance_kind, row.tolerance, row.unit).describe(),
            row.result,
        )
    stdout.print(table)
    uncovered = frame[frame["result"] == "not covered"]
    table = Table(title="claims not covered")
    for column in ("claim", "claim (config; metric)", "why"):
        table.add_column(column)
    for row in uncovered.itertuples():
        table.add_row(row.claim_id, f"{row.config}; {row.metric}", row.how)
    stdout.print(table)
    print_claims_summary(frame, stdout)


def claimed_cell(claimed: float, text: str, unit: object) -> str:
    """A claim as the file states it: its number and unit, or its words (">1",
    "RAID10 only") for a qualitative claim."""
    unit_text = "" if not isinstance(unit, str) else unit
    if math.isnan(claimed):
        return f"{text} {unit_text}".strip()
    return f"{claim_number(claimed)} {unit_text}".strip()


def simulated_unit(tolerance_kind: str, unit: object) -> str:
    """The unit of a simulated value: a direction or "unchanged" check compares a ratio."""
    if tolerance_kind == "unchanged":
        return "x"
    return unit if isinstance(unit, str) else ""


def claim_number(value: float) -> str:
    if math.isnan(value):
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:,.2f}"


def print_claims_summary(frame: pd.DataFrame, console: Console) -> None:
    summary = frame.attrs["summary"]
    lines = [
        f"study: {frame.attrs['title']}",
        *(f"method: {line}" for line in frame.attrs["method"]),
        f"measured I/Os per run: {frame.attrs['ios']}, seed {frame.attrs['seed']}",
        f"claims: {summary['claims']}; covered {summary['covered']} "
        f"({summary['checks_passed']} of {summary['checks']} checks pass); "
        f"not covered {summary['not_covered']}",
        f"claims passing: {', '.join(summary['claims_passed']) or '-'}; "
        f"failing: {', '.join(summary['claims_failed']) or '-'}",
    ]
    for row in frame[frame["result"] != "not covered"].drop_duplicates("how").itertuples():
        name = f"{row.claim_id} {row.variant}".strip()
        lines.append(f"how {name}: {row.how} ({row.role})")
    for line in lines:
        console.print(line, highlight=False, markup=False)


def print_study_summary(frame: pd.DataFrame, summary: StudySummary, console: Console) -> None:
    table = Table(title="MAPE per configuration (rows with measured 0 MB/s are skipped)")
    for column in ("config", "op", "qd", "role", "rows", "MAPE %"):
        table.add_column(column, justify="left" if column in ("config", "op", "role") else "right")
    for row in summary.per_config.itertuples():
        table.add_row(
            row.config, row.op, str(row.qd), row.role, str(row.rows), number(row.mape_pct)
        )
    console.print(table)
    note = calibration_note(frame.attrs.get("study"))
    lines = [
        f"study: {frame.attrs.get('title')} ({frame.attrs.get('drive')} on "
        f"{frame.attrs.get('controller')})",
        f"calibration rows (single drive{note}): {summary.rows_calibration}, "
        f"MAPE {number(summary.mape_calibration_pct)} %",
        f"prediction rows (arrays): {summary.rows_prediction}, "
        f"MAPE {number(summary.mape_prediction_pct)} %",
        *(
            [
                f"suspect rows ({'; '.join(summary.suspect_reasons) or 'see the study'}): "
                f"{summary.rows_suspect}, MAPE {number(summary.mape_suspect_pct)} %"
            ]
            if summary.rows_suspect
            else []
        ),
        f"naive 'N x one drive' on {summary.naive_rows} prediction rows: "
        f"MAPE {number(summary.naive_mape_prediction_pct)} % "
        f"(simulator on the same rows: {number(summary.model_mape_on_naive_rows_pct)} %)",
    ]
    if summary.rows_skipped:
        lines.append(f"skipped in MAPE (measured 0): {summary.rows_skipped} rows")
    if summary.worst_row is not None:
        worst = summary.worst_row
        lines.append(
            f"worst {worst['role']} row: {worst['config']} {worst['op']} QD "
            f"{worst['qd']} {format_size(int(worst['block_bytes']))}: measured "
            f"{number(worst['measured_mbps'])}, simulated "
            f"{number(worst['simulated_mbps'])} MB/s "
            f"({number(worst['error_pct'])} %)"
        )
    for path in frame.attrs.get("figures", []):
        lines.append(f"figure: {path}")
    if "figures" not in frame.attrs:
        lines.append("figures: none drawn (give --out DIR to draw them)")
    for line in lines:
        console.print(line, highlight=False, markup=False)


def calibration_note(study: str | None) -> str:
    from raidlab.studies.atto_studies import study_calibrations

    fields = [entry.field for entry in study_calibrations(study or "")]
    return f" + the array rows of calibrated {', '.join(fields)}" if fields else ""


def print_cross_validation(cv: CrossValidation, console: Console) -> None:
    """Per held configuration: its rows' CV MAPE and the naive model's on the same
    rows; the values refitted without each; then over all held configurations."""
    table = Table(title=f"{cv.study}: leave one array configuration out (suspect rows excluded)")
    for column in ("held config", "rows", "CV MAPE %", "naive rows", "naive MAPE %"):
        table.add_column(column, justify="left" if column == "held config" else "right")
    table.add_column("CV MAPE % on naive rows", justify="right")
    for fold in cv.per_config:
        table.add_row(
            fold.config,
            str(fold.rows),
            number(fold.cv_mape_pct),
            str(fold.naive_rows),
            number(fold.naive_mape_pct),
            number(fold.cv_mape_on_naive_rows_pct),
        )
    console.print(table)
    lines = []
    for fold in cv.per_config:
        refits = [_refit_text(entry) for entry in fold.refitted] or ["nothing calibrated"]
        lines += [f"without {fold.config}: {text}" for text in refits]
    lines += [
        f"cross-validation over {cv.overall_rows} rows of {len(cv.per_config)} held "
        f"configurations: CV MAPE {number(cv.overall_mape)} %",
        f"naive 'N x one drive' on {cv.naive_rows} of them: MAPE {number(cv.naive_mape)} % "
        f"(CV on the same rows: {number(cv.cv_mape_on_naive_rows)} %)",
        f"simulations for the cross-validation: {cv.simulations}",
    ]
    for line in lines:
        console.print(line, highlight=False, markup=False)


def _refit_text(entry: Refit) -> str:
    value = entry.value if isinstance(entry.value, str) else f"{entry.value:,}"
    fields = " = ".join((entry.field, *entry.tied_fields))
    if entry.source == "prior":
        return f"{fields} = {value} (prior: {entry.reason})"
    return (
        f"{fields} = {value} (fit on {entry.training_rows} rows of "
        f"{', '.join(entry.training_configs)}, MAPE {number(entry.training_mape_pct)} %)"
    )
