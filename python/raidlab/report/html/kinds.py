"""What each kind of input becomes: its headline, figures, tables and what repeats
it (the readers in ``raidlab.report.html.readers`` choose the kind)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report import figure_style as style
from raidlab.report.explain import explain_lines
from raidlab.report.html.charts import explain_figures, ranking_figure, transfer_figures
from raidlab.report.html.document import INPUT_LABEL, need, need_number, need_rows
from raidlab.report.html.model import Cell, Figure, Headline, Report, Section, Table
from raidlab.report.html.svg import Bar, BarChart, LegendItem, bar_chart, number_text
from raidlab.report.tables import ADVISE_HEADER, bound_text
from raidlab.units import format_size

RESULT_CSS = {"PASS": "pass", "FAIL": "fail"}
# Checks a ratio simulated / claimed does not describe: a difference in percentage
# points (a penalty of 30 % claimed, -0.0 % simulated), a direction, or a range checked
# against its own ends whatever the claimed value (a 0.05x bar marked PASS misleads).
RATIO_FREE_TOLERANCES = frozenset({"absolute", "direction", "unchanged", "range"})
# Bounds pass far from 1x: the bar's text says which side of the claim passes.
BOUND_TEXT = {"lower_bound": ">= claimed", "upper_bound": "< claimed"}
# Bars in the ranking figure: the best are what a reader compares.
RANKING_BARS_MAX = 40


# --- cells -----------------------------------------------------------------------------


def number_cell(value: Any, digits: int = 1, css: str = "") -> Cell:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell("-", None, css)
    return Cell(f"{float(value):,.{digits}f}", float(value), css)


def size_cell(block_bytes: Any, css: str = "") -> Cell:
    return Cell(format_size(int(block_bytes)), float(block_bytes), css)


def text_cell(value: Any, css: str = "") -> Cell:
    text = "" if value is None else str(value)
    return Cell(text, text, css)


def percent(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} %"


def _repeat_command(document: Mapping[str, Any], inferred: str | None) -> str | None:
    """The command line recorded in the document, else the one inferred from it."""
    command = document.get("command")
    if isinstance(command, list):
        return " ".join(map(str, command))
    return command if isinstance(command, str) else inferred


# --- ATTO studies ----------------------------------------------------------------------

STUDY_KEYS = ("config", "op", "qd", "block_bytes", "measured_mbps", "simulated_mbps", "role")


def read_study(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, STUDY_KEYS)
    for index, row in enumerate(rows):
        for key in ("qd", "block_bytes", "measured_mbps"):
            need_number(row, key, f"records[{index}]")
        need_number(row, "simulated_mbps", f"records[{index}]", allow_none=True)
    summary = document["summary"]
    if not isinstance(summary, Mapping):
        raise RaidlabError(INPUT_LABEL, "summary: expected an object")
    study = str(document["study"])
    # The study's title without a stripe unit its single-drive figures do not have.
    title = style.study_subtitle(str(document.get("title") or study))
    sections = [
        Section(
            "Measured vs simulated",
            lines=(
                "One figure per array configuration, at most "
                f"{style.QDS_PER_PANEL_MAX} queue depths a panel; under each MB/s panel the "
                "error of every row (simulated / measured - 1).",
                *(f"suspect rows: {reason}" for reason in summary.get("suspect_reasons") or []),
            ),
            figures=tuple(_study_figures(document, rows)),
        ),
        Section("MAPE per configuration", tables=(_per_config_table(summary),)),
        Section("Every row", tables=(_study_rows_table(rows),)),
    ]
    if isinstance(document.get("cross_validation"), Mapping):
        sections.append(_cross_validation_section(document["cross_validation"]))
    ios_max = document.get("ios_max")
    command = (
        f"raidlab reproduce {study} --seed {document.get('seed', 1)}"
        f"{f' --ios-max {ios_max}' if ios_max else ''} --format json"
    )
    return Report(
        "study",
        title,
        f"{document.get('drive', '?')} on {document.get('controller', '?')}; "
        f"seed {document.get('seed', '?')}; {len(rows)} rows",
        _study_headline(summary),
        sections,
        command=_repeat_command(document, command),
    )


def _study_headline(summary: Mapping[str, Any]) -> list[Headline]:
    headline = [
        Headline(
            "MAPE, prediction rows (arrays)",
            percent(summary.get("mape_prediction_pct")),
            f"{summary.get('rows_prediction', 0)} rows",
        ),
        Headline(
            "MAPE, calibration rows",
            percent(summary.get("mape_calibration_pct")),
            f"{summary.get('rows_calibration', 0)} rows",
        ),
    ]
    if summary.get("rows_suspect"):
        headline.append(
            Headline(
                "MAPE, suspect rows",
                percent(summary.get("mape_suspect_pct")),
                f"{summary['rows_suspect']} rows",
            )
        )
    headline.append(
        Headline(
            "naive 'N x one drive' MAPE",
            percent(summary.get("naive_mape_prediction_pct")),
            f"simulator on the same {summary.get('naive_rows', 0)} rows: "
            f"{percent(summary.get('model_mape_on_naive_rows_pct'))}",
        )
    )
    worst = summary.get("worst_row")
    if isinstance(worst, Mapping):
        headline.append(
            Headline(
                f"worst {worst.get('role', '')} row",
                percent(worst.get("error_pct")),
                f"{worst.get('config')} {worst.get('op')} QD {worst.get('qd')} "
                f"{format_size(int(worst.get('block_bytes', 0)))}",
            )
        )
    return headline


def _study_figures(document: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[Figure]:
    """Rows grouped by figure (configurations listing the same single disk share
    one), each row drawn once."""
    configs = document.get("configs") if isinstance(document.get("configs"), Mapping) else {}
    assert isinstance(configs, Mapping)
    groups: dict[str, list[Mapping[str, Any]]] = {}
    first_config: dict[str, str] = {}
    seen: set[tuple[Any, ...]] = set()
    for row in rows:
        config = str(row["config"])
        name = str((configs.get(config) or {}).get("figure") or config)
        first_config.setdefault(name, config)
        key = (name, row["op"], row["qd"], row["block_bytes"], row["measured_mbps"])
        if key in seen:
            continue
        seen.add(key)
        groups.setdefault(name, []).append(row)
    caption = style.study_subtitle(str(document.get("title") or document["study"]))
    figures = []
    for name, group in groups.items():
        config = configs.get(first_config[name]) or {}
        title = style.config_title(
            name,
            config.get("drive_count"),
            str(document.get("drive", "?")),
            str(document.get("controller", "?")),
            config.get("stripe_unit_bytes"),
        )
        figures.extend(transfer_figures(group, title, measured=True, caption=caption))
    return figures


def _per_config_table(summary: Mapping[str, Any]) -> Table:
    rows = [
        (
            text_cell(item.get("config")),
            text_cell(item.get("op")),
            number_cell(item.get("qd"), 0),
            text_cell(item.get("role"), "suspect" if item.get("role") == "suspect" else ""),
            number_cell(item.get("rows"), 0),
            number_cell(item.get("mape_pct")),
        )
        for item in summary.get("per_config") or []
        if isinstance(item, Mapping)
    ]
    return Table(
        "MAPE per configuration, op and queue depth (rows measured at 0 MB/s are skipped)",
        ("config", "op", "qd", "role", "rows", "MAPE %"),
        tuple(rows),
        frozenset({"qd", "rows", "MAPE %"}),
    )


def _study_rows_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    body = []
    for row in rows:
        css = "suspect" if row["role"] == "suspect" else ""
        ratio = style.error_ratio(row["measured_mbps"], row["simulated_mbps"])
        body.append(
            (
                text_cell(row["config"], css),
                text_cell(row["op"], css),
                number_cell(row["qd"], 0, css),
                size_cell(row["block_bytes"], css),
                number_cell(row["measured_mbps"], 1, css),
                number_cell(row["simulated_mbps"], 1, css),
                number_cell(None if ratio is None else 100 * ratio, 1, css),
                text_cell(row["role"], css),
            )
        )
    return Table(
        "measured vs simulated, every row (MB/s = 10^6 B/s; click a header to sort)",
        (
            "config",
            "op",
            "qd",
            "transfer size",
            "measured MB/s",
            "simulated MB/s",
            "error %",
            "role",
        ),
        tuple(body),
        frozenset({"qd", "transfer size", "measured MB/s", "simulated MB/s", "error %"}),
    )


def _cross_validation_section(cv: Mapping[str, Any]) -> Section:
    rows = tuple(
        (
            text_cell(fold.get("config")),
            number_cell(fold.get("rows"), 0),
            number_cell(fold.get("cv_mape_pct")),
            number_cell(fold.get("naive_rows"), 0),
            number_cell(fold.get("naive_mape_pct")),
        )
        for fold in cv.get("per_config") or []
        if isinstance(fold, Mapping)
    )
    return Section(
        "Cross-validation",
        lines=(str(cv.get("method", "")),),
        tables=(
            Table(
                "leave one array configuration out",
                ("held config", "rows", "CV MAPE %", "naive rows", "naive MAPE %"),
                rows,
                frozenset({"rows", "CV MAPE %", "naive rows", "naive MAPE %"}),
            ),
        ),
    )


# --- claim studies ---------------------------------------------------------------------

CLAIM_KEYS = ("claim_id", "variant", "config", "metric", "claimed", "simulated", "result")


def read_claims(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, CLAIM_KEYS)
    summary = document.get("summary") or {}
    checks = [row for row in rows if row["result"] != "not covered"]
    uncovered = [row for row in rows if row["result"] == "not covered"]
    passed = len(summary.get("claims_passed") or [])
    failed = len(summary.get("claims_failed") or [])
    headline = [
        Headline(
            "claims passing",
            f"{passed} of {passed + failed}",
            f"{summary.get('claims', len(rows))} claims, "
            f"{summary.get('not_covered', len(uncovered))} not covered",
        ),
        Headline(
            "checks passing",
            f"{summary.get('checks_passed', '?')} of {summary.get('checks', len(checks))}",
        ),
        Headline("failing claims", ", ".join(summary.get("claims_failed") or []) or "none"),
    ]
    figures = _claims_figures(checks)
    sections = [
        Section(
            "Claims checked",
            lines=tuple(f"method: {line}" for line in document.get("method") or []),
            figures=tuple(figures),
            tables=(_claims_table(checks),),
        ),
        Section("Claims not covered", tables=(_uncovered_table(uncovered),)),
    ]
    study = str(document["study"])
    command = (
        f"raidlab reproduce {study} --seed {document.get('seed', 1)}"
        f"{' --ios-max ' + str(document['ios']) if document.get('ios') else ''} --format json"
    )
    return Report(
        "claims",
        str(document.get("title") or study),
        f"claim study {study}; measured I/Os per run {document.get('ios', '?')}; "
        f"seed {document.get('seed', '?')}",
        headline,
        sections,
        command=_repeat_command(document, command),
    )


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _claims_figures(checks: Sequence[Mapping[str, Any]]) -> list[Figure]:
    bars = []
    for row in checks:
        claimed, simulated = row.get("claimed"), row.get("simulated")
        if not (_numeric(claimed) and _numeric(simulated)) or claimed <= 0 or simulated < 0:
            continue
        if row.get("tolerance_kind") in RATIO_FREE_TOLERANCES:
            continue
        ratio = float(simulated) / float(claimed)
        name = f"{row['claim_id']} {row.get('variant') or ''}".strip()
        side = BOUND_TEXT.get(str(row.get("tolerance_kind")))
        colour = style.OKABE_ITO[0] if row["result"] == "PASS" else style.OKABE_ITO[1]
        bars.append(
            Bar(
                name,
                ratio,
                colour,
                tip=f"{name} ({row['result']}): claimed "
                f"{number_text(float(claimed))} {row.get('unit') or ''}, simulated "
                f"{number_text(float(simulated))}; {row.get('condition') or ''}",
                text=f"{ratio:.2f}x {row['result']}" + (f" ({side})" if side else ""),
            )
        )
    if not bars:
        return []
    chart = BarChart(
        "simulated / claimed, per check of a number (not of a difference or direction)",
        "simulated / claimed (1 = as claimed)",
        tuple(bars),
        legend=(
            LegendItem("PASS", style.OKABE_ITO[0], "swatch"),
            LegendItem("FAIL", style.OKABE_ITO[1], "swatch"),
        ),
        reference=1.0,
    )
    return [
        Figure(
            "simulated against claimed",
            (bar_chart(chart, width=620),),
            caption="The tolerance of each check is in the table below.",
        )
    ]


def _claims_table(checks: Sequence[Mapping[str, Any]]) -> Table:
    body = []
    for row in checks:
        css = RESULT_CSS.get(str(row["result"]), "")
        claimed = row.get("claimed")
        claimed_text = (
            f"{number_text(float(claimed))} {row.get('unit') or ''}".strip()
            if _numeric(claimed)
            else f"{row.get('claimed_text') or ''} {row.get('unit') or ''}".strip()
        )
        body.append(
            (
                text_cell(row["claim_id"]),
                text_cell(row.get("variant")),
                text_cell(f"{row['config']}; {row['metric']}; {row.get('condition') or ''}"),
                Cell(claimed_text, float(claimed) if _numeric(claimed) else None),
                number_cell(row.get("simulated"), 2),
                text_cell(row.get("tolerance_text") or row.get("tolerance_kind")),
                text_cell(row["result"], css),
                text_cell(row.get("role")),
            )
        )
    return Table(
        "claimed vs simulated (click a header to sort)",
        (
            "claim",
            "variant",
            "config; metric; condition",
            "claimed",
            "simulated",
            "tolerance",
            "result",
            "role",
        ),
        tuple(body),
        frozenset({"claimed", "simulated"}),
    )


def _uncovered_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    return Table(
        "claims not covered, and why",
        ("claim", "config; metric", "why"),
        tuple(
            (
                text_cell(row["claim_id"]),
                text_cell(f"{row['config']}; {row['metric']}"),
                text_cell(row.get("how")),
            )
            for row in rows
        ),
    )


# --- advise ----------------------------------------------------------------------------

ADVISE_KEYS = ("rank", "level", "stripe_unit_bytes", "write_cache", "iops", "mbps", "lat_p99_us")
ADVISE_METRICS = {"iops": "IOPS", "mbps": "MB/s (10^6 B/s)", "lat_p99_us": "p99 latency (us)"}


def _candidate(row: Mapping[str, Any]) -> str:
    return (
        f"RAID {row['level']}, {format_size(int(row['stripe_unit_bytes']))} stripe unit, "
        f"{row['write_cache']}"
    )


def ranked_by(document: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """The metric the candidates are ranked by: the document's, else the first the
    order follows (advise's JSON before it carried ``metric``)."""
    metric = document.get("metric")
    if metric in ADVISE_METRICS:
        return str(metric)
    for name in ADVISE_METRICS:
        values = [float(row.get(name) or 0.0) for row in rows]
        ordered = sorted(values, reverse=name != "lat_p99_us")
        if values == ordered:
            return name
    return "iops"


def read_advise(document: Mapping[str, Any]) -> Report:
    rows = sorted(need_rows(document, ADVISE_KEYS), key=lambda row: int(row["rank"]))
    for index, row in enumerate(rows):
        for key in ("rank", "level", "stripe_unit_bytes", "iops", "mbps"):
            need_number(row, key, f"records[{index}]")
    metric = ranked_by(document, rows)
    best = rows[0]
    headline = [
        Headline("winner", _candidate(best), f"ranked by {metric}, of {len(rows)} candidates"),
        Headline("IOPS", number_text(float(best["iops"]))),
        Headline("MB/s (10^6 B/s)", number_text(float(best["mbps"]))),
        Headline("p99 latency", f"{number_text(float(best['lat_p99_us'] or 0))} us"),
    ]
    why = document.get("why")
    lines = tuple(str(why).splitlines()) if why else ()
    figure = ranking_figure(
        rows[:RANKING_BARS_MAX],
        metric,
        lambda row: f"#{row['rank']} {_candidate(row)}",
        ADVISE_METRICS[metric],
    )
    sections = [
        Section("Why the winner wins", lines=lines) if lines else None,
        Section("Candidates", figures=(figure,), tables=(_advise_table(rows),)),
    ]
    return Report(
        "advise",
        "raidlab advise: candidate arrays, best first",
        f"{len(rows)} candidates ranked by {metric}",
        headline,
        [section for section in sections if section is not None],
        command=_repeat_command(document, None),
    )


def _advise_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    body = []
    for row in rows:
        bound = bound_text(
            row.get("bound"),
            row.get("bottleneck"),
            row.get("bottleneck_utilisation") or 0,
            row.get("stage_longest"),
        )
        usable = row.get("usable_bytes")
        body.append(
            (
                number_cell(row["rank"], 0),
                number_cell(row["level"], 0),
                size_cell(row["stripe_unit_bytes"]),
                text_cell(row["write_cache"]),
                Cell(
                    "-" if usable is None else f"{float(usable) / 1e9:,.0f} GB",
                    None if usable is None else float(usable),
                ),
                number_cell(row.get("tolerated_failures"), 0),
                number_cell(row["iops"], 0),
                number_cell(row["mbps"]),
                number_cell(row["lat_p99_us"]),
                text_cell(bound),
            )
        )
    return Table(
        "candidate arrays (click a header to sort)",
        ADVISE_HEADER,
        tuple(body),
        frozenset(
            {"rank", "level", "stripe unit", "usable", "tolerates", "IOPS", "MB/s", "lat p99 us"}
        ),
    )


# --- run, replay -----------------------------------------------------------------------

RUN_KEYS = ("op", "iops", "mbps", "lat_mean_us")
RUN_REPEAT = (
    "Repeat it: save the scenario below as scenario.json, then\n"
    'python -c "import json; from raidlab.scenario.native import simulate; '
    "print(json.dumps(simulate(json.load(open('scenario.json'))), indent=2))\""
)


def read_run(document: Mapping[str, Any]) -> Report:
    return _run_report(document, "run", document.get("explain"), document.get("rebuild"))


def read_replay(document: Mapping[str, Any]) -> Report:
    results = document["results"]
    return _run_report(document, "replay", results.get("explain"), results.get("rebuild"))


def _run_report(
    document: Mapping[str, Any],
    kind: str,
    explain: Mapping[str, Any] | None,
    rebuild: Mapping[str, Any] | None,
) -> Report:
    rows = need_rows(document, RUN_KEYS)
    scenario = document.get("scenario")
    if not isinstance(scenario, Mapping):
        raise RaidlabError(INPUT_LABEL, "scenario: expected an object")
    workload = scenario.get("workload") or {}
    headline = []
    for row in rows:
        headline += [
            Headline(f"{row['op']} IOPS", number_text(float(row["iops"]))),
            Headline(f"{row['op']} MB/s (10^6 B/s)", number_text(float(row["mbps"]))),
            Headline(
                f"{row['op']} latency",
                f"{number_text(float(row['lat_mean_us']))} us mean",
                f"p99 {number_text(float(row.get('lat_p99_us') or 0))} us",
            ),
        ]
    sections = [
        Section(
            "Results",
            figures=(_latency_figure(rows),),
            tables=(_run_table(rows),),
        ),
        Section(
            "Explain: where the time goes",
            # The per-resource lines are the utilisation chart's bars.
            lines=tuple(explain_lines(explain, rebuild, resources=False)),
            figures=tuple(explain_figures(explain, "explain breakdown")),
        ),
    ]
    return Report(
        kind,
        f"raidlab {kind}: {array_text(scenario.get('array') or {}, document.get('drive'))}",
        f"{_workload_text(workload)}; seed {document.get('seed', scenario.get('seed', '?'))}"
        f"{'; drives ' + str(document['drive_state']) if document.get('drive_state') else ''}",
        headline,
        sections,
        command=_repeat_command(document, None),
        repeat_documents={"scenario": scenario},
        repeat_note=RUN_REPEAT,
    )


def array_text(array: Mapping[str, Any], drive_name: Any = None) -> str:
    """The array in a title: the drive as the command named it (its preset; files
    written before the name was recorded give the drive's kind)."""
    drive = array.get("drive") or {}
    controller = array.get("controller") or {}
    count = array.get("drive_count")
    return (
        f"RAID {array.get('level', '?')} of {count if count is not None else '?'} x "
        f"{drive_name or drive.get('kind', '?')} on {controller.get('name', '?')}, "
        f"{style.striping_text(count, array.get('stripe_unit_bytes'))}"
    )


def _workload_text(workload: Mapping[str, Any]) -> str:
    sizes = workload.get("bs") or []
    bs = ",".join(
        format_size(int(size)) + (f":{weight}" if len(sizes) > 1 else "") for size, weight in sizes
    )
    return (
        f"{workload.get('rw', '?')} {bs or '?'}, iodepth {workload.get('iodepth', '?')} x "
        f"{workload.get('numjobs', '?')} jobs"
    )


def _latency_figure(rows: Sequence[Mapping[str, Any]]) -> Figure:
    bars = []
    for index, row in enumerate(rows):
        for stat in LATENCY_COLUMNS:
            if row.get(stat) is None:
                continue
            name = f"{row['op']} {LATENCY_COLUMNS[stat].removeprefix('lat ').removesuffix(' us')}"
            bars.append(
                Bar(
                    name,
                    float(row[stat]),
                    style.OKABE_ITO[index % 8],
                    text=f"{number_text(float(row[stat]))} us",
                )
            )
    chart = BarChart("latency per op", "latency (us)", tuple(bars))
    return Figure("latency", (bar_chart(chart),))


LATENCY_COLUMNS = {
    "lat_mean_us": "lat mean us",
    "lat_p50_us": "lat p50 us",
    "lat_p99_us": "lat p99 us",
    # SSD datasheets state their quality of service at the 99.9th percentile.
    "lat_p999_us": "lat p99.9 us",
}


def rows_table(
    title: str,
    rows: Sequence[Mapping[str, Any]],
    labels: Sequence[str],
    latency: Sequence[str] = tuple(LATENCY_COLUMNS),
) -> Table:
    """Rows of a run or a suite: their ``labels`` (``op``, a suite's ``test``), IOPS,
    MB/s and the ``latency`` columns."""
    shown = [LATENCY_COLUMNS[key] for key in latency]
    return Table(
        title,
        (*labels, "IOPS", "MB/s", *shown),
        tuple(
            (
                *(text_cell(row.get(label)) for label in labels),
                number_cell(row["iops"], 0),
                number_cell(row["mbps"]),
                *(number_cell(row.get(key)) for key in latency),
            )
            for row in rows
        ),
        frozenset({"IOPS", "MB/s", *shown}),
    )


def _run_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    return rows_table("per direction (MB/s = 10^6 B/s)", rows, ("op",))


# --- atto ------------------------------------------------------------------------------

ATTO_KEYS = ("op", "qd", "block_bytes", "mbps")


def read_atto(document: Mapping[str, Any]) -> Report:
    rows = need_rows(document, ATTO_KEYS)
    for index, row in enumerate(rows):
        for key in ATTO_KEYS[1:]:
            need_number(row, key, f"records[{index}]")
    array = document["array"] if isinstance(document["array"], Mapping) else {}
    headline = []
    for op in ("read", "write"):
        op_rows = [row for row in rows if row["op"] == op]
        if op_rows:
            best = max(op_rows, key=lambda row: float(row["mbps"]))
            headline.append(
                Headline(
                    f"peak {op} MB/s (10^6 B/s)",
                    number_text(float(best["mbps"])),
                    f"{format_size(int(best['block_bytes']))} at QD {best['qd']}",
                )
            )
    title = f"ATTO sweep: {array_text(array, document.get('drive'))}"
    sections = [
        Section(
            "MB/s over transfer size (simulated)",
            figures=tuple(transfer_figures(rows, title, measured=False)),
            tables=(_atto_table(rows),),
        ),
        _atto_explain_section(document["explain"]),
    ]
    depths = ",".join(str(qd) for qd in sorted({int(row["qd"]) for row in rows}))
    return Report(
        "atto",
        title,
        f"queue depths {depths}; seed {document.get('seed', '?')}"
        f"{'; drives ' + str(document['drive_state']) if document.get('drive_state') else ''}",
        headline,
        sections,
        command=_repeat_command(document, None),
        repeat_documents={"array": array},
        repeat_note="The array as the simulator ran it (presets resolved); the queue depths "
        "and transfer sizes are the table's.",
    )


def _atto_explain_section(points: Sequence[Any]) -> Section:
    """The explain of the largest transfer at the deepest queue, per op: where the
    array saturates (the point ``raidlab atto --explain`` prints)."""
    points = [
        need(point, ("op", "qd", "block_bytes", "explain"), f"explain[{index}]")
        for index, point in enumerate(points)
    ]
    if not points:
        return Section("Explain", lines=("(the sweep carries no explain data)",))
    qd_max = max(int(point["qd"]) for point in points)
    block_max = max(int(point["block_bytes"]) for point in points)
    figures, lines = [], []
    for point in points:
        if int(point["qd"]) == qd_max and int(point["block_bytes"]) == block_max:
            name = f"{point['op']} {format_size(block_max)} at QD {qd_max}"
            figures += explain_figures(point["explain"], f"explain: {name}")
            lines += [f"{name}: {line}" for line in explain_lines(point["explain"])[:2]]
    return Section(
        "Explain: where the time goes at the largest transfer and deepest queue",
        lines=tuple(lines),
        figures=tuple(figures),
    )


def _atto_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    return Table(
        "every point (MB/s = 10^6 B/s; click a header to sort)",
        ("op", "qd", "transfer size", "MB/s", "IOPS", "lat mean us", "lat p99 us"),
        tuple(
            (
                text_cell(row["op"]),
                number_cell(row["qd"], 0),
                size_cell(row["block_bytes"]),
                number_cell(row["mbps"]),
                number_cell(row.get("iops"), 0),
                number_cell(row.get("lat_mean_us")),
                number_cell(row.get("lat_p99_us")),
            )
            for row in rows
        ),
        frozenset({"qd", "transfer size", "MB/s", "IOPS", "lat mean us", "lat p99 us"}),
    )
