"""Commands over presets and published studies: presets, advise, reproduce."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from raidlab import api
from raidlab.cli.flags import (
    ARRAY,
    CLUSTER,
    FORMAT,
    IOS_DEFAULT,
    IOS_MAX,
    JOBS,
    LOG_Y,
    RISK,
    SEED,
    WORKLOAD,
    Shown,
    check_format,
    cluster_scope,
    flagset,
    given,
    opt,
    parse_jobs,
)
from raidlab.cli.root import app
from raidlab.errors import RaidlabError, user_errors
from raidlab.frontends.atto import IOS_MAX_DEFAULT, parse_ios_max
from raidlab.reliability import RiskOptions
from raidlab.report.output import print_json, records, stderr, stdout
from raidlab.report.presets import print_preset_details
from raidlab.report.tables import (
    advise_table_rows,
    print_frame,
    print_table,
    study_table_rows,
)
from raidlab.scenario.array import parse_int
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.studies import CLAIMS_IOS_DEFAULT, STUDY_NAMES
from raidlab.units import format_size


@app.command(
    epilog="""Examples:

\b
  raidlab presets
  raidlab presets --format csv
  raidlab presets --format json
  raidlab presets show intel-dc-s3500-80g
  raidlab presets show megaraid-9361 --format json
  raidlab presets show my-drive.toml
  raidlab presets import-disksim data/disksim/atlas_III.parv --out atlas.toml
"""
)
@flagset(FORMAT)
def presets(
    action: Annotated[
        str | None,
        typer.Argument(
            help="show: every parameter of one preset with its source; import-disksim: "
            "write the drive of a DiskSim 4 .parv file to --out (docs/disksim.md)."
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Argument(
            help="The preset to show: a drive, controller or host preset, or a drive file "
            "(my-drive.toml, as `raidlab calibrate` writes)."
        ),
    ] = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="import-disksim: the drive file to write (required there, no default).",
        ),
    ] = None,
    *,
    output_format: str,
) -> None:
    """List drive and controller presets with their key figures (CSV and JSON: one
    column per figure, named by its preset key; JSON also every parameter of every
    preset, hosts included, with its source), or show one preset's parameters."""
    with user_errors():
        output_format = check_format(output_format)
        if action == "import-disksim":
            _import_disksim(name, out)
            return
        if action is not None:
            if action != "show":
                raise RaidlabError("ACTION", f"must be show or import-disksim, got {action!r}")
            if name is None:
                raise RaidlabError("NAME", "give the preset to show (see `raidlab presets`)")
            print_preset_details(api.preset_details(name, "NAME"), output_format)
            return
        frame = api.presets()
        # Programs get the figures as columns; the text form is for people.
        figures = frame.drop(columns=["key_figures"])
        if output_format == "csv":
            sys.stdout.write(figures.to_csv(index=False))
        elif output_format == "json":
            print_json({"records": _records_with_sources(records(figures))})
        else:
            table = Table(title="presets (sources: comments in raidlab/scenario/presets/*.toml)")
            for column in ("group", "name", "kind", "key_figures"):
                table.add_column(column, overflow="fold")
            for row in frame.itertuples():
                table.add_row(row.group, row.name, row.kind, row.key_figures)
            stdout.print(table)


def _import_disksim(parv: str | None, out: str | None) -> None:
    if parv is None:
        raise RaidlabError("NAME", "give the DiskSim .parv file to import")
    if out is None:
        raise RaidlabError("--out", "give the drive file to write (DRIVE.toml)")
    unrepresented = api.import_disksim(parv, out, "FILE")
    stderr.print(
        f"warning: {len(unrepresented)} DiskSim parameters raidlab does not "
        f"represent (listed in {out}):",
        markup=False,
        highlight=False,
    )
    for entry in unrepresented:
        stderr.print(f"warning:   {entry}", markup=False, highlight=False)
    typer.echo(f"wrote {out}")


def _records_with_sources(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The key-figure records with each preset's every parameter and source added, and
    the presets with no key-figure row (hosts) after them."""
    details = {(entry["group"], entry["name"]): entry for entry in api.preset_details()}
    out = []
    for row in rows:
        entry = details.pop((row["group"], row["name"]))
        out.append({**row, "parameters": entry["parameters"], "notes": entry["notes"]})
    for entry in details.values():
        out.append(
            {
                "group": entry["group"],
                "name": entry["name"],
                "kind": entry["kind"] or None,
                "description": entry["description"],
                "parameters": entry["parameters"],
                "notes": entry["notes"],
            }
        )
    return out


ADVISE_LABELS = {
    "job": "--job",
    "access_spec": "--workload",
    "capacity": "--capacity",
    "tolerate": "--tolerate",
    "metric": "--metric",
    "max_loss_probability": "--max-loss-probability",
}
ADVISE_WORKLOAD_KEYS = ("rw", "bs", "iodepth", "numjobs", "rwmixread")


@app.command(
    epilog="""Examples:

\b
  raidlab advise --drive intel-dc-s3500-80g --drives 4 --controller megaraid-9361 \\
      --rw randrw --bs 4K --iodepth 32 --tolerate 1
  raidlab advise --drive hitachi-deskstar-250g --drives 6 --rw write --bs 1M \\
      --iodepth 4 --capacity 800G --metric mbps
  raidlab advise --drive intel-dc-s3500-80g --drives 4 --controller megaraid-9361 \\
      --job tests/data/fio/rwmix.fio --tolerate 1
  raidlab advise --drive wd-caviar-blue-500g --drives 4 --controller megaraid-9361 \\
      --workload database --tolerate 1 --metric lat_p99_us
  raidlab advise --drive wd-caviar-blue-500g --drives 6 --mtbf-hours 1e6 --ure 1e14 \\
      --metric risk --max-loss-probability 0.01
"""
)
@flagset(
    ARRAY["drive"],
    ARRAY["drives"],
    ARRAY["controller"],
    ARRAY["scheduler"],
    WORKLOAD.only(*ADVISE_WORKLOAD_KEYS, "ios"),
    RISK.only("mtbf_hours", "afr", "ure", "mission_years", "replace_after", "hot_spare"),
    ARRAY["rebuild_rate"],
    SEED,
    JOBS,
    CLUSTER,
    FORMAT,
    defaults={**api.ADVISE_WORKLOAD, "ios": IOS_DEFAULT},
)
def advise(
    job: Annotated[
        Path | None,
        opt(
            "--job",
            "A fio job file: its jobs, run together, are the workload (default: the "
            "fio-style flags).",
        ),
    ] = None,
    workload_spec: Annotated[
        str | None,
        opt(
            "--workload",
            "An IOMeter preset (desktop, database, fileserver) or access specification "
            "(default: the fio-style flags).",
        ),
    ] = None,
    capacity: Annotated[str, opt("--capacity", "Usable capacity needed, e.g. 500G.")] = "0",
    tolerate: Annotated[str, opt("--tolerate", "Drive failures to survive in every case.")] = "0",
    metric: Annotated[
        str,
        opt("--metric", "Rank by iops, mbps, lat_p99_us or risk (P(loss) over the mission)."),
    ] = "iops",
    max_loss_probability: Annotated[
        str | None,
        opt(
            "--max-loss-probability",
            "Only candidates whose P(loss) is at most this (default: no limit).",
        ),
    ] = None,
    *,
    drive: str | None,
    drives: str | None,
    controller: str | None,
    scheduler: str | None,
    workload: WorkloadRequest,
    risk: RiskOptions,
    rebuild_rate: str | None,
    seed: str,
    jobs: str | None,
    cluster: str | None,
    output_format: str,
) -> None:
    """Simulate the RAID levels, stripe units and cache settings (write-through,
    write-back, FastPath where the controller has it) a set of drives allows for a
    workload, and rank them, with the bottleneck of each and why the winner wins."""
    # Long for its signature: the options only advise takes are declared here, each with
    # its help, as typer reads them from the parameter list; the body relays one call.
    with user_errors(), cluster_scope(cluster, jobs):
        output_format = check_format(output_format)
        request = _advise_workload(workload, job, workload_spec)
        labels = _advise_labels()
        from raidlab.studies.advise import AdviseRequest

        wanted = AdviseRequest(
            drive=drive,
            drives=drives or "1",
            controller=controller,
            scheduler=scheduler,
            capacity=capacity,
            tolerate=tolerate,
            metric=metric,
            risk=replace(risk, labels=labels),
            rebuild_rate=rebuild_rate,
            max_loss_probability=max_loss_probability,
            seed=seed,
            labels=labels,
        )
        frame = api.advise(
            wanted,
            workload=request,
            job=job,
            access_spec=workload_spec,
            ios=workload.ios,
            jobs=parse_jobs(jobs),
        )
        if output_format == "table":
            print_table(advise_table_rows(frame), "candidate arrays, best first")
            stdout.print(frame.attrs["why"], highlight=False, markup=False)
        else:
            print_frame(frame, output_format, "candidate arrays, best first")


def _advise_workload(
    workload: WorkloadRequest, job: Path | None, workload_spec: str | None
) -> WorkloadRequest | None:
    """The fio-style flags' workload, or None when --job or --workload gives it (and
    then no fio-style workload flag may be given)."""
    if job is None and workload_spec is None:
        return workload
    own = "--job" if job is not None else "--workload"
    leave_out = given(*ADVISE_WORKLOAD_KEYS)
    if leave_out:
        raise RaidlabError(own, f"the workload comes from {own}; leave out {', '.join(leave_out)}")
    return None


def _advise_labels() -> dict[str, str]:
    """The flag that names each AdviseRequest field in advise's errors."""
    return {
        **ADVISE_LABELS,
        **WORKLOAD.labels(),
        **RISK.labels(),
        **{
            key: ARRAY[key].flag
            for key in ("drive", "drives", "controller", "scheduler", "rebuild_rate")
        },
        "seed": SEED.flag,
    }


@app.command(
    epilog="""Examples:

\b
  raidlab reproduce ssd-raid0-atto
  raidlab reproduce hdd-raid0-atto --out figures/hdd --jobs 2
  raidlab reproduce ssd-raid0-atto --format csv > ssd.csv
  raidlab reproduce hdd-raid0-atto --format json > hdd.json
  raidlab reproduce hdd-raid0-atto --cross-validate --jobs 1
  raidlab reproduce ssd-raid-tuning            # claims: PASS/FAIL per claim
  raidlab reproduce ssd-raid-tuning --strict   # exit 1 if any claim fails

A configuration a study did not measure, simulated with the study's method (its file
size, FastPath, warm-up): the atto/run/fio commands of docs/predict.md.
"""
)
@flagset(
    FORMAT,
    JOBS,
    CLUSTER,
    IOS_MAX,
    SEED,
    LOG_Y,
    defaults={
        "ios_max": Shown(f"{IOS_MAX_DEFAULT} per ATTO point, {CLAIMS_IOS_DEFAULT} per claim run")
    },
)
def reproduce(
    study: Annotated[str, typer.Argument(help=f"Study: {', '.join(STUDY_NAMES)}.")],
    out: Annotated[
        Path | None,
        opt(
            "--out",
            "ATTO studies: draw the figures into this directory, created with its parents "
            "if missing (checked before the simulation; default: no figures, nothing "
            "written, whatever the --format).",
        ),
    ] = None,
    strict: Annotated[
        bool, opt("--strict", "Claim studies: exit with status 1 if any claim fails.")
    ] = False,
    cross_validate: Annotated[
        bool,
        opt(
            "--cross-validate",
            "ATTO studies: also leave each array configuration out in turn, refit the "
            "controller fields calibrated on array rows without it, and report its "
            "rows' MAPE (CV MAPE) next to the naive model's.",
        ),
    ] = False,
    *,
    output_format: str,
    jobs: str | None,
    cluster: str | None,
    ios_max: str | None,
    seed: str,
    log_y: bool,
) -> None:
    """Simulate every row of a published measurement and report the error: per row,
    MAPE per configuration, overall for prediction and calibration rows, the worst
    row, and the naive 'N x one drive' model for comparison. Claim studies check each
    claim of the article with a tolerance and say which claims are not covered, and why."""
    # The studies load with the command, not with the command line.
    from raidlab.report.studies import print_claims
    from raidlab.studies.claim_studies import CLAIM_STUDIES

    with user_errors(), cluster_scope(cluster, jobs):
        output_format = check_format(output_format)
        if study == "raidix-cache":
            _reproduce_raidix_cache(output_format, out, jobs, ios_max, seed)
            return
        _check_reproduce_flags(study, strict, cross_validate, log_y, out)
        ios = None if ios_max is None else parse_ios_max(ios_max, "--ios-max")
        frame = api.reproduce(
            study,
            jobs=parse_jobs(jobs),
            out=out,
            ios_max=ios,
            seed=parse_int(seed, "--seed", 0, 2**64 - 1),
            labels={"out": "--out", "cross_validate": "--cross-validate"},
            cross_validate=cross_validate,
            log_y=log_y,
        )
        if study in CLAIM_STUDIES:
            print_claims(frame, output_format)
            if strict and frame.attrs["summary"]["claims_failed"]:
                raise typer.Exit(1)
            return
        # What was simulated: the default I/O count, not None, when the flag was left out.
        _print_atto_study(study, frame, output_format, IOS_MAX_DEFAULT if ios is None else ios)


def _check_reproduce_flags(
    study: str, strict: bool, cross_validate: bool, log_y: bool, out: Path | None
) -> None:
    """The study exists and takes the options given: --strict is for claim studies,
    --cross-validate for ATTO studies, --log-y draws the figures of --out."""
    from raidlab.studies.atto_studies import STUDIES, get_study
    from raidlab.studies.claim_studies import CLAIM_STUDIES

    if study not in CLAIM_STUDIES:
        get_study(study, "STUDY")
        if strict:
            raise RaidlabError("--strict", f"only for claim studies ({', '.join(CLAIM_STUDIES)})")
    elif cross_validate:
        raise RaidlabError(
            "--cross-validate",
            f"only for ATTO studies ({', '.join(STUDIES)}): {study} is a claim study "
            "and calibrates nothing on array rows",
        )
    if log_y and out is None:
        raise RaidlabError("--log-y", "it draws the figures of --out; give --out DIR too")


def _print_atto_study(study: str, frame: Any, output_format: str, ios_max: int) -> None:
    """An ATTO study's rows, summary and cross-validation in ``output_format``."""
    from raidlab.report.studies import print_cross_validation, print_study_summary
    from raidlab.studies.atto_studies import STUDIES, StudySummary, summary_dict
    from raidlab.studies.cross_validation import CrossValidation, cross_validation_dict

    summary: StudySummary = frame.attrs["summary"]
    cv: CrossValidation | None = frame.attrs.get("cross_validation")
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        print_study_summary(frame, summary, stderr)
        if cv is not None:
            print_cross_validation(cv, stderr)
    elif output_format == "json":
        extra = {} if cv is None else {"cross_validation": cross_validation_dict(cv)}
        print_json(
            {
                "study": study,
                "title": frame.attrs.get("title"),
                "drive": frame.attrs.get("drive"),
                "controller": frame.attrs.get("controller"),
                "seed": frame.attrs.get("seed"),
                # What was simulated: the I/O count and the ATTO test file.
                "ios_max": ios_max,
                "length_bytes": STUDIES[study].length_bytes,
                # What each configuration is, for `raidlab report`'s figure titles.
                "configs": {
                    name: {
                        "drive_count": count,
                        "stripe_unit_bytes": frame.attrs["stripe_units"].get(name),
                        "figure": frame.attrs["figures_of"].get(name, name),
                    }
                    for name, count in frame.attrs.get("drive_counts", {}).items()
                },
                "records": records(frame),
                "summary": summary_dict(summary),
                "figures": list(frame.attrs.get("figures", [])),
                **extra,
            }
        )
    else:
        method = (
            f"{format_size(STUDIES[study].length_bytes)} test file, at most "
            f"{ios_max} I/Os per point, seed "
            f"{frame.attrs.get('seed')}"
        )
        print_table(study_table_rows(frame), title=f"{study}: measured vs simulated ({method})")
        print_study_summary(frame, summary, stdout)
        if cv is not None:
            print_cross_validation(cv, stdout)


def _reproduce_raidix_cache(
    output_format: str, out: Path | None, jobs: str | None, ios_max: str | None, seed: str
) -> None:
    """``reproduce raidix-cache``: the table rows and M01-M04, stated against simulated."""
    from raidlab.report.raidix_cache import table_lines

    ios = None if ios_max is None else parse_ios_max(ios_max, "--ios-max")
    frame = api.reproduce(
        "raidix-cache",
        jobs=parse_jobs(jobs),
        out=out,
        ios_max=ios,
        seed=parse_int(seed, "--seed", 0, 2**64 - 1),
        labels={"out": "--out"},
    )
    # Rows of a pattern whose text does not map to workloads: in the output, unsimulated.
    not_simulated = [
        f"row {item['row']} not simulated: {item['reason']}"
        for item in frame.attrs.get("not_simulated", [])
    ]
    if output_format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
        for line in not_simulated:
            stderr.print(line, highlight=False, markup=False)
        return
    if output_format == "json":
        print_json(
            {
                "study": "raidix-cache",
                "title": frame.attrs["title"],
                "seed": frame.attrs["seed"],
                "ios_max": frame.attrs["ios"],
                "method": frame.attrs["method"],
                "write_hits": frame.attrs["write_hits"],
                "nand_bytes_per_host_byte": frame.attrs["nand_bytes_per_host_byte"],
                "records": records(frame),
                "not_simulated": list(frame.attrs.get("not_simulated", [])),
                "figures": list(frame.attrs.get("figures", [])),
            }
        )
        return
    stdout.print(f"[bold]{frame.attrs['title']}[/bold]", highlight=False)
    for line in table_lines(frame):
        stdout.print(line, highlight=False, markup=False)
    for line in not_simulated:
        stdout.print(line, highlight=False, markup=False)
    hits = frame.attrs["write_hits"]
    stdout.print(
        f"SSD write hits (cache bytes written per host byte written): raidix "
        f"{hits['raidix']:.2f}, lru {hits['lru']:.2f}",
        highlight=False,
    )
    for line in frame.attrs["method"]:
        stdout.print(f"  method: {line}", highlight=False, markup=False)
    for path in frame.attrs.get("figures", []):
        stdout.print(f"figure: {path}", highlight=False)
