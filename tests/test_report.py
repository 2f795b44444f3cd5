"""`raidlab report`: a command's JSON output as one self-contained HTML page, its
figures drawn to the readability rules (raidlab.report.figure_style), checked as
HTML and in a real browser (headless Chromium: `conftest.require_tool` skips without it,
or fails under RAIDLAB_REQUIRE_TOOLS=1)."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser import CHROMIUM_NAMES, load_page, svg_marks
from raidlab.cli import app
from raidlab.report import figure_style as style
from raidlab.report.html import build_report, render
from raidlab.report.html.readers import load_input
from typer.testing import CliRunner

runner = CliRunner()
DATA = Path(__file__).parent / "data" / "report"
OUT = Path(__file__).resolve().parents[1] / "out"
# Each fixture is a command's real --format json output, rows trimmed.
KINDS = {
    "study-ssd.json": "study",
    "study-hdd.json": "study",
    "claims.json": "claims",
    "raidix-cache.json": "cache-study",
    "run.json": "run",
    "replay.json": "replay",
    "atto.json": "atto",
    "advise.json": "advise",
    "sweep.json": "sweep",
    "sweep.csv": "sweep",  # raidlab sweep's own files, its JSON's rows
    "fio.json": "fio",
    "cdm.json": "cdm",
    "iometer.json": "iometer",
    "pts.json": "pts",
    "life.json": "life",
    "risk.json": "risk",
}
if importlib.util.find_spec("pyarrow") is not None:
    KINDS["sweep.parquet"] = "sweep"


def document(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = load_input(DATA / name)
    return loaded


def page(name: str | dict[str, Any], **options: Any) -> str:
    source = document(name) if isinstance(name, str) else name
    return render(build_report(source), **options)


def svgs(html: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", html, flags=re.S)


# --- what each kind becomes -----------------------------------------------------------


@pytest.mark.parametrize(("name", "kind"), KINDS.items())
def test_each_kind_of_input_is_recognised_by_its_shape(name: str, kind: str) -> None:
    assert build_report(document(name)).kind == kind


@pytest.mark.parametrize("name", KINDS)
def test_every_page_is_self_contained(name: str) -> None:
    html = page(name)
    # The one URL is the SVG namespace, which is a name, not a fetch.
    urls = set(re.findall(r"https?://[^\s'\"<)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=", html)
    assert svgs(html), "no figure"


@pytest.mark.parametrize("name", KINDS)
def test_the_same_input_gives_the_same_bytes(name: str) -> None:
    assert page(name) == page(name)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("study-ssd.json", ["MAPE, prediction rows (arrays)", "6.2 %", "worst prediction row"]),
        ("study-hdd.json", ["MAPE, suspect rows", "naive &#x27;N x one drive&#x27; MAPE"]),
        ("claims.json", ["claims passing", "19 of 30", "failing claims"]),
        ("raidix-cache.json", ["SSD write hits RAIDIX / LRU", "1.07 / 9.10", "stated 6.0x"]),
        ("run.json", ["write IOPS", "10,003", "write latency", "us mean"]),
        ("replay.json", ["read IOPS", "write MB/s (10^6 B/s)"]),
        ("atto.json", ["peak read MB/s (10^6 B/s)", "1M at QD 4"]),
        ("advise.json", ["winner", "RAID 10, 256K stripe unit, wt", "ranked by iops"]),
        ("sweep.csv", ["best IOPS", "110,830", "#3 level=0, rw=randwrite, drives=8, iodepth=32"]),
        ("fio.json", ["seqread read IOPS", "seqwrite write IOPS", "us mean"]),
        ("cdm.json", ["best read MB/s (10^6 B/s)", "SEQ1M Q8T1"]),
        ("iometer.json", ["read IOPS", "write IOPS", "total IOPS"]),
        ("pts.json", ["steady state", "tracking 0/100 4K iops"]),
        ("life.json", ["first SSD to reach its rating", "years", "warranty"]),
        ("risk.json", ["P(data loss) in 5 years", "MTTDL", "rebuild"]),
    ],
)
def test_the_headline_states_the_key_figures(name: str, words: list[str]) -> None:
    headline = page(name).split("<section class='headline'>")[1].split("</section>")[0]
    for word in words:
        assert word in headline


def test_the_cache_study_shows_every_row_its_claims_and_both_policies() -> None:
    study = document("raidix-cache.json")
    html = page(study)
    for row in study["records"]:
        assert f">{row['row']}</td>" in html, row["row"]
    assert "SSD write hits per policy" in html
    assert "raidlab reproduce raidix-cache --seed 1 --ios-max 5000 --format json" in html


def test_advise_names_the_winner_and_why_it_wins() -> None:
    rows = [
        {"rank": 1, "level": 10, "stripe_unit_bytes": 65536, "write_cache": "wb",
         "iops": 900.0, "mbps": 3.6, "lat_p99_us": 80.0, "bound": "resource",
         "bottleneck": "drive0.flash", "bottleneck_utilisation": 0.97},
        {"rank": 2, "level": 5, "stripe_unit_bytes": 16384, "write_cache": "wt",
         "iops": 400.0, "mbps": 1.6, "lat_p99_us": 300.0, "bound": "latency",
         "stage_longest": "drive"},
    ]  # fmt: skip
    html = page({"records": rows, "metric": "iops", "why": "RAID 10 writes once, not 4 I/Os"})
    assert "RAID 10, 64K stripe unit, wb" in html
    assert "RAID 10 writes once, not 4 I/Os" in html
    assert "candidates by iops" in html


def test_a_run_shows_the_explain_breakdown_and_its_scenario() -> None:
    html = page("run.json")
    assert "resource utilisation" in html and "latency of an I/O by stage" in html
    assert "drive2.flash (bottleneck)" in html
    assert "<details><summary>scenario.json" in html
    assert "raidlab.scenario.native import simulate" in html


def test_a_study_names_the_command_that_repeats_it() -> None:
    assert "raidlab reproduce hdd-raid0-atto --seed 1 --format json" in page("study-hdd.json")


# --- figures people can read ----------------------------------------------------------


def test_no_panel_draws_more_than_four_queue_depths() -> None:
    html = page("study-ssd.json")  # the single SSD was measured at 10 queue depths
    panels = [svg for svg in svgs(html) if "MB/s (10^6 B/s)" in svg]
    assert len(panels) >= 2 * 3 * 2  # (single: 3 groups + RAID 0: 1) x read, write; lin, log
    for svg in panels:
        depths = set(re.findall(r"data-label='QD (\d+) simulated'", svg))
        assert 1 <= len(depths) <= style.QDS_PER_PANEL_MAX


def test_depths_split_into_even_groups_of_at_most_four() -> None:
    assert style.depth_groups([1, 2, 4, 8, 10, 16, 32, 64, 128, 256]) == [
        [1, 2, 4, 8],
        [10, 16, 32],
        [64, 128, 256],
    ]
    assert style.depth_groups([4, 1]) == [[1, 4]]


def test_colours_are_okabe_ito_and_never_the_faint_yellow() -> None:
    html = page("study-ssd.json")
    colours = set(re.findall(r"stroke='(#[0-9A-F]{6})'", html))
    data_colours = colours - {"#999", "#555", "#333"}
    assert data_colours <= set(style.OKABE_ITO) - {"#F0E442"}, data_colours


def test_measured_and_simulated_differ_by_marker_not_dash() -> None:
    html = page("study-ssd.json")
    assert "dasharray" not in html
    measured = re.findall(r"<g class='series' data-label='QD \d+ measured'>(.*?)</g>", html)
    simulated = re.findall(r"<g class='series' data-label='QD \d+ simulated'>(.*?)</g>", html)
    assert measured and simulated
    assert all("polyline" not in group and "fill='white'" in group for group in measured)
    assert all("polyline" in group and "fill='white'" not in group for group in simulated)


def test_suspect_rows_are_drawn_as_crosses_and_marked_in_the_tables() -> None:
    html = page("study-hdd.json")
    assert "class='mark suspect'" in html
    assert style.SUSPECT_LABEL in html
    assert "<td class='suspect' data-sort='suspect'>suspect</td>" in html
    assert "suspect rows: single disk QD 4, identical to QD 1 in the paper" in html


def test_every_mbps_panel_has_an_error_panel_and_a_log_version() -> None:
    html = page("study-hdd.json")
    linear = re.findall(r"<div class='linear-y'><svg", html)
    log = re.findall(r"<div class='log-y-only'><svg", html)
    errors = [svg for svg in svgs(html) if style.AXIS_ERROR in svg]
    assert len(linear) == len(log) == len(errors) > 0
    assert all(", log scale" in svg for svg in svgs(html.split("log-y-only'>", 1)[1])[:1])
    assert "<body class='kind-study log-y'>" in page("study-hdd.json", log_y=True)


def test_both_axes_carry_units() -> None:
    for svg in svgs(page("atto.json")):
        if "<polyline" in svg:
            assert style.AXIS_TRANSFER in svg and style.AXIS_MBPS in svg


def test_figure_titles_state_their_own_striping_without_contradiction() -> None:
    html = page("study-ssd.json")
    titles = re.findall(r"<figcaption>(.*?)</figcaption>", html)
    assert any("single: 1 x adata-sp900-128g on intel-h97-rst, no striping" in t for t in titles)
    assert any("raid0_2: 2 x adata-sp900-128g on intel-h97-rst, stripe 16K" in t for t in titles)
    assert "stripe 16K" not in html.split("<h1>")[1].split("</h1>")[0]
    for title in titles:
        assert not ("no striping" in title and "stripe " in title.replace("no striping", ""))


def test_a_study_title_loses_the_stripe_each_figure_states() -> None:
    assert (
        style.study_subtitle("SSD RAID 0, ATTO (Davidovic et al.), stripe 16K, 32 GiB file")
        == "SSD RAID 0, ATTO (Davidovic et al.), 32 GiB file"
    )
    assert style.striping_text(1, 16384) == "no striping"
    assert style.striping_text(2, 16384) == "stripe 16K"


# --- tables and escaping --------------------------------------------------------------


@pytest.mark.parametrize("name", KINDS)
def test_every_table_sorts_and_numeric_cells_sort_as_numbers(name: str) -> None:
    html = page(name)
    tables = re.findall(r"<table class='sortable'>.*?</table>", html, flags=re.S)
    assert tables
    for cell in re.findall(r"<td class='num[^']*' data-sort='([^']*)'>", html):
        if cell:
            float(cell)
    assert "function sortTable" in html


def test_names_from_the_input_are_escaped() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    study = document("study-hdd.json")
    for row in study["records"]:
        row["config"] = hostile + row["config"]
    study["configs"] = {hostile + name: value for name, value in study["configs"].items()}
    run = copy.deepcopy(document("run.json"))
    run["scenario"]["array"]["controller"]["name"] = "</script><script>alert(2)</script>"
    for html in (page(study), page(run)):
        assert "<img" not in html
        assert "alert(2)</script>" not in html
        assert html.count("<script>") == 1
    assert "&lt;img src=x onerror=alert(1)&gt;" in page(study)


# --- the command ----------------------------------------------------------------------


def test_report_writes_the_page_and_says_where(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = runner.invoke(
        app, ["report", str(DATA / "claims.json"), "--out", str(out), "--title", "A & B"]
    )
    assert result.exit_code == 0, result.output
    assert f"report (claims): {out}" in result.stdout
    assert "<title>A &amp; B</title>" in out.read_text()


def test_report_reads_standard_input(tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    result = runner.invoke(
        app, ["report", "-", "--out", str(out)], input=(DATA / "run.json").read_text()
    )
    assert result.exit_code == 0, result.output
    assert "raidlab run: RAID 5 of 4 x ssd on linux-md" in out.read_text()


def _hostile_inputs(tmp_path: Path) -> dict[str, tuple[str, list[str]]]:
    (tmp_path / "not.json").write_text("records: no\n")
    (tmp_path / "list.json").write_text("[1, 2]\n")
    (tmp_path / "other.json").write_text('{"hello": 1}\n')
    broken = document("study-hdd.json")
    del broken["records"][3]["qd"]
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    cache = document("raidix-cache.json")
    cache["write_hits"]["lru"] = "many"
    (tmp_path / "cache.json").write_text(json.dumps(cache))
    return {
        "not.json": ("INPUT", ["is not JSON", "line 1 column 1"]),
        "list.json": ("INPUT", ["expected a JSON object, got a JSON list"]),
        "other.json": ("INPUT", ["keys: hello", "raidlab reproduce", "raidlab advise"]),
        "broken.json": ("INPUT", ["records[3].qd: missing"]),
        "cache.json": ("INPUT", ["write_hits.lru: expected a number", "'many'"]),
        "missing.json": ("INPUT", ["no such file"]),
    }


@pytest.mark.parametrize(
    "name", ["not.json", "list.json", "other.json", "broken.json", "cache.json", "missing.json"]
)
def test_bad_input_is_one_error_line_and_status_2(tmp_path: Path, name: str) -> None:
    field, words = _hostile_inputs(tmp_path)[name]
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(tmp_path / name), "--out", str(out)])
    assert_one_line_error(result, field, words)
    assert not out.exists()


@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("{tmp}/no-such-dir/r.html", ["does not exist"]),
        ("{tmp}", ["is a directory"]),
        ("/proc/r.html", ["cannot write"]),
    ],
)
def test_an_unwritable_out_is_refused_before_reading(
    tmp_path: Path, out: str, words: list[str]
) -> None:
    result = runner.invoke(
        app, ["report", str(tmp_path / "never-read.json"), "--out", out.format(tmp=tmp_path)]
    )
    assert_one_line_error(result, "--out", words)


def assert_one_line_error(result: Any, field: str, words: list[str]) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), result.stderr
    assert all(word in lines[0] for word in words), lines[0]


@pytest.mark.parametrize("name", ["study-hdd.json", "sweep.csv"])
def test_report_loads_neither_pandas_nor_matplotlib(tmp_path: Path, name: str) -> None:
    probe = (
        "import sys\n"
        "from raidlab.cli import main\n"
        f"sys.argv = ['raidlab', 'report', {str(DATA / name)!r}, "
        f"'--out', {str(tmp_path / 'r.html')!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_a_real_run_becomes_a_report(tmp_path: Path) -> None:
    """The fixtures' shape is the commands' shape today: a real run, piped."""
    run = runner.invoke(
        app,
        ["run", "--drive", "intel-dc-s3500-80g", "--ios", "200", "--format", "json"],
    )
    assert run.exit_code == 0, run.output
    out = tmp_path / "run.html"
    result = runner.invoke(app, ["report", "-", "--out", str(out)], input=run.stdout)
    assert result.exit_code == 0, result.output
    assert "read IOPS" in out.read_text()
    # The datasheets' quality-of-service percentile, as `raidlab run` prints it.
    assert "lat p99.9 us" in out.read_text()
    assert "read p99.9" in out.read_text()


# --- the matplotlib figures follow the same rules ---------------------------------------


def test_study_pngs_follow_the_rules(tmp_path: Path) -> None:
    import pandas as pd
    from raidlab.report.plots import plot_study

    study = document("study-hdd.json")
    frame = pd.DataFrame(study["records"])
    frame.attrs.update(
        study=study["study"],
        title=study["title"],
        drive=study["drive"],
        controller=study["controller"],
        drive_counts={k: v["drive_count"] for k, v in study["configs"].items()},
        stripe_units={k: v["stripe_unit_bytes"] for k, v in study["configs"].items()},
        figures_of={k: v["figure"] for k, v in study["configs"].items()},
    )
    import matplotlib.pyplot as plt

    drawn: list[Any] = []
    original = plt.close
    plt.close = lambda figure=None: drawn.append(figure)  # type: ignore[assignment]
    try:
        paths = plot_study(frame, tmp_path / "figures")
    finally:
        plt.close = original
    assert [path.name for path in paths][0] == "hdd-raid0-atto-single.png"
    assert all(path.stat().st_size > 10_000 for path in paths)
    single = drawn[0]
    title = single._suptitle.get_text()
    assert title.startswith("single: 1 x hitachi-deskstar-250g on dell-perc6i, no striping")
    assert "stripe" not in title.replace("no striping", "")
    axes = single.get_axes()
    assert len(axes) == 4  # QD 1, 4: MB/s read, write; error read, write
    assert axes[0].get_ylabel() == style.AXIS_MBPS and axes[0].get_xlabel() == style.AXIS_TRANSFER
    assert axes[2].get_ylabel() == style.AXIS_ERROR
    labels = [text.get_text() for text in axes[0].get_legend().get_texts()]
    assert style.SUSPECT_LABEL in labels and style.MEASURED_LABEL in labels
    for axis in axes:
        for line in axis.get_lines():
            assert line.get_linestyle() in ("-", "None")
    for figure in drawn:
        original(figure)


# --- in a real browser ----------------------------------------------------------------

needs_chromium = pytest.mark.tool(*CHROMIUM_NAMES)


@needs_chromium
@pytest.mark.parametrize("name", KINDS)
def test_the_page_renders_in_a_real_browser_without_console_errors(
    tmp_path: Path, name: str
) -> None:
    html = tmp_path / "report.html"
    html.write_text(page(name))
    OUT.mkdir(exist_ok=True)
    shot = OUT / f"report-{name.removesuffix('.json').replace('.', '-')}.png"
    loaded = load_page(html, screenshot=shot)
    assert loaded.console == []
    assert 'data-ready="yes"' in loaded.dom  # the page's script ran to its end
    marks = svg_marks(loaded.dom)
    assert len(marks) == len(svgs(html.read_text())) > 0
    assert all(count > 0 for count in marks), marks
    assert shot.stat().st_size > 10_000


# Clicks "error %" once (ascending), then the first "config" header twice
# (descending), and turns the log y-axis on; writes what it saw into the page for
# --dump-dom.
PROBE = """<script>
const header = name => Array.from(document.querySelectorAll("th"))
  .find(th => th.textContent === name);
const column = (th) => {
  const index = Array.prototype.indexOf.call(th.parentNode.children, th);
  return Array.from(th.closest("table").tBodies[0].rows)
    .map(row => row.cells[index].dataset.sort);
};
const error = header("error %"); error.click();
const error_order = column(error);
const config = header("config"); config.click(); config.click();
const config_order = column(config);
const log = document.getElementById("log-y"); log.checked = true;
log.dispatchEvent(new Event("change"));
const probe = document.createElement("pre"); probe.id = "probe";
probe.textContent = JSON.stringify({error: error_order, config: config_order,
  logY: document.body.classList.contains("log-y"),
  visibleLog: getComputedStyle(document.querySelector(".log-y-only")).display});
document.body.appendChild(probe);
</script></body>"""


@needs_chromium
def test_headers_sort_and_the_log_switch_works_in_a_real_browser(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    html.write_text(page("study-hdd.json").replace("</body>", PROBE))
    loaded = load_page(html)
    assert loaded.console == []
    found = re.search(r"<pre id=\"probe\">(.*?)</pre>", loaded.dom, flags=re.S)
    assert found, loaded.dom[-2000:]
    probe = json.loads(found.group(1).replace("&quot;", '"'))
    errors = [float(value) for value in probe["error"] if value != ""]
    assert errors == sorted(errors) and len(errors) > 10
    assert probe["error"][-1] == "" or "" not in probe["error"]  # blanks sort last
    assert probe["config"] == sorted(probe["config"], reverse=True)
    assert probe["logY"] is True and probe["visibleLog"] != "none"


@needs_chromium
def test_the_browser_check_sees_a_script_error(tmp_path: Path) -> None:
    """The harness itself: a page whose script fails is caught."""
    html = tmp_path / "broken.html"
    html.write_text(page("run.json").replace("</body>", "<script>noSuchFunction();</script>"))
    loaded = load_page(html)
    assert any("Uncaught ReferenceError" in line for line in loaded.console), loaded.console


def test_a_reproduced_study_becomes_a_report(fake_native: None, tmp_path: Path) -> None:
    """reproduce's JSON carries what the figure titles need (drives, stripe unit)."""
    study = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--jobs", "1", "--format", "json"])
    assert study.exit_code == 0, study.output
    assert json.loads(study.stdout)["configs"]["raid0_2_su8K"] == {
        "drive_count": 2,
        "stripe_unit_bytes": 8192,
        "figure": "raid0_2_su8K",
    }
    out = tmp_path / "study.html"
    result = runner.invoke(app, ["report", "-", "--out", str(out)], input=study.stdout)
    assert result.exit_code == 0, result.output
    assert "raid0_2_su8K: 2 x hitachi-deskstar-250g on dell-perc6i, stripe 8K" in out.read_text()


def test_the_png_figures_take_a_log_y_axis(fake_native: None, tmp_path: Path) -> None:
    path = tmp_path / "sweep.png"
    atto = ["atto", "--drive", "adata-sp900-128g", "--qd", "1", "--sizes", "4K..64K"]
    atto += ["--length", "1G", "--jobs", "1"]
    result = runner.invoke(app, [*atto, "--plot", str(path), "--log-y"])
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(b"\x89PNG")
    assert_one_line_error(runner.invoke(app, [*atto, "--log-y"]), "--log-y", ["--plot"])
    refused = runner.invoke(app, ["reproduce", "hdd-raid0-atto", "--log-y"])
    assert_one_line_error(refused, "--log-y", ["--out"])


def test_a_log_y_figure_has_log_mbps_panels_and_linear_error_panels() -> None:
    import matplotlib.pyplot as plt
    import pandas as pd
    from raidlab.report.plots import atto_figure

    frame = pd.DataFrame(document("study-hdd.json")["records"])
    figure = atto_figure(frame[frame["config"] == "raid0_2_su8K"], "t", True, log_y=True)
    scales = [axis.get_yscale() for axis in figure.get_axes()]
    plt.close(figure)
    assert scales == ["log", "log", "linear", "linear"]


def test_a_sweep_reads_the_same_from_its_csv_and_its_json() -> None:
    """The CSV's cells are typed back (numbers, texts, blanks) as the JSON has them."""
    from_csv, from_json = document("sweep.csv"), document("sweep.json")
    # The JSON's numbers are pandas' (10 significant digits), the CSV's Python's repr.
    for row_csv, row_json in zip(from_csv["records"], from_json["records"], strict=True):
        assert list(row_csv) == list(row_json)
        for key, value in row_csv.items():
            if isinstance(value, float):
                assert value == pytest.approx(row_json[key], rel=1e-9), key
            else:
                assert value == row_json[key], key
    html = page("sweep.csv")
    assert "mean IOPS by workload.iodepth" in html and "the 24 best points by IOPS" in html
    assert "<th class='num' title='click to sort'>array.level</th>" in html
    assert "<th title='click to sort'>workload.rw</th>" in html  # texts sort as texts


def test_a_sweep_table_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from raidlab.report.html import sweep

    monkeypatch.setattr(sweep, "TABLE_ROWS_MAX", 5)
    html = page("sweep.csv")
    assert "the first 5 of 24" in html
    assert html.split("every point (click")[1].count("<tr>") == 1 + 5


# --- issue 34 defect 11: what the pages said wrong ---------------------------------------


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["cdm", "--drive", "intel-dc-s3500-80g", "--ios", "300", "--runs", "1"], "cdm"),
        (["iometer", "database", "--drive", "intel-dc-s3500-80g", "--ios", "300"], "iometer"),
        (
            ["pts", "--drive", "intel-dc-s3500-80g", "--mixes", "100/0", "--sizes", "4K"]
            + ["--ios", "300", "--rounds-max", "5"],
            "pts",
        ),
        (
            ["life", "--drive", "intel-dc-s3500-80g", "--rw", "randwrite", "--ios", "2000"]
            + ["--tb-per-day", "0.1"],
            "life",
        ),
        (["risk", "--drive", "wd-caviar-blue-500g", "--level", "5", "--drives", "4"], "risk"),
        (
            ["fio", "--name=a", "--rw=randread", "--bs=4k", "--size=64M", "--number_ios=300"]
            + ["--drive", "intel-dc-s3500-80g", "--output-format=json"],
            "fio",
        ),
    ],
)
def test_every_command_with_json_output_becomes_a_report(
    tmp_path: Path, command: list[str], kind: str
) -> None:
    """`report` refused fio, cdm, pts, iometer, life and risk JSON; each is a page now,
    from the command's output of today (the fixtures could go stale)."""
    if kind != "fio":
        command += ["--format", "json"]
    if kind == "risk":
        command += ["--ios", "500", "--episodes", "2000"]
    made = runner.invoke(app, command)
    assert made.exit_code == 0, made.output
    out = tmp_path / f"{kind}.html"
    result = runner.invoke(app, ["report", "-", "--out", str(out)], input=made.stdout)
    assert result.exit_code == 0, result.output
    assert f"report ({kind})" in result.output
    html = out.read_text()
    assert svgs(html) and "<table" in html


def test_a_run_report_names_its_drive_and_lists_the_wear_it_heads(tmp_path: Path) -> None:
    """The title said 'x ssd' (the model's kind) and 'flash wear ...:' headed nothing
    (its indented member lines were dropped with the per-resource lines)."""
    run = runner.invoke(
        app,
        ["run", "--drive", "intel-dc-s3500-80g", "--drives", "2", "--rw", "randwrite"]
        + ["--ios", "500", "--format", "json"],
    )
    assert run.exit_code == 0, run.output
    html = page(json.loads(run.stdout))
    assert "<title>raidlab run: RAID 0 of 2 x intel-dc-s3500-80g" in html
    lines = re.findall(r"<p>(.*?)</p>", html.split("where the time goes")[1])
    heading = next(i for i, line in enumerate(lines) if line.startswith("flash wear"))
    assert lines[heading + 1].strip().startswith("NAND bytes written per host byte")
    assert any(line.strip().startswith("member 1: host") for line in lines[heading:])
    # The per-resource lines are the chart's bars, not text.
    assert not any(re.search(r"\S+ +drive +[\d.]+ % busy", line) for line in lines)


def test_no_figure_title_is_wider_than_its_panel() -> None:
    """The HDD study's error panels were titled 'read: error per row, QD 1, 2, 4 and 8
    (n off the axis)' centred on a 460 px panel: the browser cut 'ead: ...'."""
    from raidlab.report.html.svg import TITLE_CHAR_PX

    for name in ("study-hdd.json", "study-ssd.json", "claims.json"):
        for svg in svgs(page(name)):
            width = float(re.search(r"width='(\d+)'", svg).group(1))  # type: ignore[union-attr]
            for text in re.findall(r"font-size='12' font-weight='600'[^>]*>([^<]*)<", svg):
                assert len(text) * TITLE_CHAR_PX <= width - 16, (name, text)


def test_a_long_title_breaks_between_words_and_keeps_every_word() -> None:
    from raidlab.report.html.svg import Bar, BarChart, bar_chart

    title = "read: error per row, QD 1, 2, 4, 8, 16 and 32 (3 off the axis, see the table)"
    svg = bar_chart(BarChart(title, "x", (Bar("a", 1.0, "#000"),)), width=300)
    shown = re.findall(r"font-weight='600'[^>]*>([^<]*)<", svg)
    assert len(shown) > 1 and " ".join(shown) == title
    assert f"<title>{title}</title>" in svg


def test_a_range_check_is_not_drawn_as_a_ratio_to_the_claim() -> None:
    """A range is checked against its own ends, whatever the claimed value: a bar
    '0.05x PASS' said the opposite of the check."""
    claims = copy.deepcopy(document("claims.json"))
    check = next(row for row in claims["records"] if isinstance(row.get("simulated"), float))
    check.update(tolerance_kind="range", tolerance_text="1.5..3", result="PASS")
    name = f"{check['claim_id']} {check.get('variant') or ''}".strip()
    html = page(claims)
    figure = html.split("simulated / claimed, per check")[1].split("</svg>")[0]
    assert f">{name}<" not in figure
    bound = copy.deepcopy(document("claims.json"))
    row = next(row for row in bound["records"] if isinstance(row.get("simulated"), float))
    row.update(tolerance_kind="upper_bound", result="PASS")
    assert "PASS (&lt; claimed)" in page(bound)


def test_long_lines_of_repeat_it_wrap_inside_the_page() -> None:
    assert re.search(r"pre \{[^}]*white-space: pre-wrap", page("sweep.csv"))


def test_the_sweep_table_says_what_bound_each_point_as_its_csv_and_report_do(
    tmp_path: Path,
) -> None:
    """The terminal's 'bottleneck' column named the busiest resource of latency-bound
    points (drive2.flash (48 %)) where the CSV says bound=latency and the report
    'latency: drive'."""
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(
        'seed = 1\n[array]\ndrive = "intel-dc-s3500-80g"\ndrives = 4\nlevel = 0\n'
        '[tuning]\nprecondition = "steady"\n'
        '[workload]\nrw = "randwrite"\nbs = "4K"\nios = 3000\n'
        '[grid]\n"workload.iodepth" = [1, 32]\n'
    )
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["sweep", str(sweep_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # --out s.csv names the CSV itself (it wrote s.csv.csv).
    assert out.exists() and (tmp_path / "s.parquet").exists()
    rows = load_input(out)["records"]
    html = page(load_input(out))
    for row in rows:
        expected = (
            f"latency: {row['stage_longest']}"
            if row["bound"] == "latency"
            else f"{row['bottleneck']} ({100 * row['bottleneck_utilisation']:.0f} %)"
        )
        line = next(line for line in result.output.splitlines() if f"│ {row['point']} " in line)
        assert expected in line, (expected, line)
        assert f">{expected}<" in html
    assert {row["bound"] for row in rows} == {"latency", "resource"}
