"""Studies: published ATTO measurements paired with the configurations that produced them.

A study simulates every measured row and reports the error (MAPE, worst row) next to
the naive "N x one drive" model. Rows are labelled by role:

- ``calibration``: single-drive rows (drive presets are calibrated on them), plus the
  array rows of the controller fields listed in CONTROLLER_CALIBRATIONS;
- ``prediction``: every other array row. These are what the simulator is judged on;
- ``suspect``: rows whose measurement is doubtful (SUSPECT_ROWS gives the reason).
  They stay in the table, the CSV and the figures, but their MAPE is reported apart
  so neither the calibration nor the prediction MAPE includes them.

The measurement CSVs are read by ``raidlab.studies.reference_data``: ``data/reference/``
of the source checkout, else the copy shipped in the package (``raidlab/studies/
reference/``) so an installed package can reproduce its studies, and
``$RAIDLAB_REFERENCE_DIR`` over both.

MAPE skips rows whose measured value is 0 (a percentage error of 0 is undefined; the
HDD study prints writes in whole kB/s, so tiny writes could round to 0).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from raidlab.errors import RaidlabError
from raidlab.frontends.atto import IOS_MAX_DEFAULT, atto_scenario
from raidlab.scenario.array import ArrayRequest, build_array
from raidlab.scenario.executor import Simulator, run_scenarios
from raidlab.scenario.presets import unknown_name_message
from raidlab.scenario.workloads import op_metrics
from raidlab.studies import reference_data

# pandas loads where a frame is built, not with the module: the command line starts
# without it (docs/benchmarks.md, start-up).
if TYPE_CHECKING:
    import pandas as pd

STUDY_COLUMNS = [
    "study",
    "config",
    "op",
    "qd",
    "block_bytes",
    "measured_mbps",
    "simulated_mbps",
    "error_pct",
    "role",
]
SUMMARY_COLUMNS = ["config", "op", "qd", "role", "rows", "mape_pct"]


@dataclass(frozen=True)
class RowPattern:
    """Array rows of a study: one op at one queue depth, at the listed transfer sizes
    (None: every size), on the listed array configurations (None: every array
    configuration of the study). Single-drive rows never match: drives are calibrated
    on them, not the controller."""

    op: str
    qd: int
    block_bytes: tuple[int, ...] | None = None
    configs: tuple[str, ...] | None = None

    def matches(self, config: StudyConfig, op: str, qd: int, block_bytes: int) -> bool:
        return (
            config.drives > 1
            and (op, qd) == (self.op, self.qd)
            and (self.block_bytes is None or block_bytes in self.block_bytes)
            and (self.configs is None or config.name in self.configs)
        )


# A controller field's value: a number, or "unlimited" where the field takes it.
CalibratedValue = int | float | str


@dataclass(frozen=True)
class Prior:
    """What a calibrated field is when no training rows remain (cross-validation held
    out every configuration it was calibrated on): a value that owes nothing to the
    study's array rows, and why it is a fair guess. ``"unlimited"`` where the preset
    field takes it."""

    value: CalibratedValue
    reason: str


@dataclass(frozen=True)
class Calibration:
    """A controller field set from a study's array rows.

    ``reproduce`` uses the preset's value as it is (fitted on all of ``rows``) and marks
    those rows ``calibration``. Cross-validation refits the field without the held
    configuration's rows: a deterministic 1-D search over ``search_range`` (log
    space) minimising the MAPE of the remaining ``rows``, or ``prior`` when none
    remain. ``tied_fields`` take the same value (e.g. a read-ahead hit costing the
    driver what a request does)."""

    study: str
    controller: str
    field: str
    rows: tuple[RowPattern, ...]
    search_range: tuple[int, int]
    prior: Prior
    reason: str
    tied_fields: tuple[str, ...] = ()

    def matches(self, config: StudyConfig, op: str, qd: int, block_bytes: int) -> bool:
        return any(pattern.matches(config, op, qd, block_bytes) for pattern in self.rows)

    def fields(self) -> tuple[str, ...]:
        return (self.field, *self.tied_fields)


def _kib(*sizes: int) -> tuple[int, ...]:
    """Transfer sizes in KiB as bytes, for a RowPattern."""
    return tuple(size * 1024 for size in sizes)


# Controller fields calibrated on array rows. Their rows are reported as `calibration`,
# never as `prediction`, so the prediction MAPE stays honest; `--cross-validate`
# refits each without the held configuration. The values in use are the preset's
# (raidlab/scenario/presets/controllers.toml), fitted on every row listed here.
CONTROLLER_CALIBRATIONS: list[Calibration] = [
    Calibration(
        study="hdd-raid0-atto",
        controller="dell-perc6i",
        field="member_queue_depth",
        rows=(
            RowPattern(
                "write",
                1,
                _kib(256, 512, 1024, 2048, 4096, 8192),
                configs=("raid0_2_su8K",),
            ),
        ),
        search_range=(1, 32),
        prior=Prior(
            32,
            "no figure published for the SAS1078's queue per RAID member: the drives' own "
            "NCQ depth (32 tags) bounds it",
        ),
        reason="with the drive write cache off, 8 KiB strips go to the platter one "
        "queue-full per revolution: 2-disk 8 KiB-strip writes of 256 KiB-8 MiB level off "
        "at ~14 strips per revolution per disk",
    ),
    Calibration(
        study="ssd-raid0-atto",
        controller="intel-h97-rst",
        field="request_overhead_ns",
        tied_fields=("read_hit_overhead_ns",),
        # The 2-drive array's row only: the preset's value was fitted on it, so a row of
        # another array (raid0_3, held back from the file) is a prediction.
        rows=(RowPattern("read", 16, (512,), configs=("raid0_2",)),),
        search_range=(500, 50_000),
        prior=Prior(
            5_650,
            "one adapter's serial per-I/O host path, as published for an Intel reference "
            "platform: up to 177,000 IOPS through one host-bus adapter (Foong, Veal, Hady, "
            "'Towards SSD-Ready Enterprise Platforms', ADMS 2010: data copies, MMIO reads, "
            "interrupts and context switches), 1e9 / 177,000 = 5.65 us per I/O. In RAID "
            "mode the PCH's AHCI controller is one adapter under RST's one miniport, so every "
            "volume request, a read-ahead hit included, takes that path; no RST figure is "
            "published",
        ),
        reason="512 B reads at QD 16 are served from RST's read-ahead buffer, one "
        "request per ~7.6 us",
    ),
    Calibration(
        study="hdd-raid0-atto",
        controller="dell-perc6i",
        field="member_op_overhead_ns",
        rows=(
            RowPattern(
                "read",
                1,
                _kib(16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
                configs=("raid0_2_su8K",),
            ),
            RowPattern(
                "read",
                1,
                _kib(128, 256, 512, 1024),
                configs=("raid0_2_su64K",),
            ),
            RowPattern(
                "read",
                1,
                _kib(256, 512, 1024, 2048),
                configs=("raid0_4_su64K",),
            ),
        ),
        search_range=(10_000, 300_000),
        prior=Prior(
            10_000,
            "no figure published for the SAS1078 firmware's time per member command; "
            "the preset's assumption before this calibration",
        ),
        reason="the PERC posts a request's member commands one after the other "
        "(member_dispatch = serial): a request on one member costs what one disk does, "
        "each further member adds time on the critical path (QD 1 reads of several "
        "strips: 16 KiB on 8 KiB strips +165 us, 4 x 64 KiB +186 us over parallel "
        "members)",
    ),
]


def study_calibrations(study: str) -> list[Calibration]:
    """The entries of CONTROLLER_CALIBRATIONS for ``study``, in list order."""
    return [entry for entry in CONTROLLER_CALIBRATIONS if entry.study == study]


@dataclass(frozen=True)
class SuspectRows:
    """Rows of a study whose measurement is doubtful: every row of ``study`` with this
    drive count and queue depth. ``reason`` is what the summary prints."""

    study: str
    drives: int
    qd: int
    reason: str


SUSPECT_ROWS: list[SuspectRows] = [
    # data/reference/README.md: "Rows for 1 disk at QD 4 are identical to QD 1 in the
    # paper: the single-disk baseline was probably not re-measured."
    SuspectRows(
        "hdd-raid0-atto", drives=1, qd=4, reason="single disk QD 4, identical to QD 1 in the paper"
    ),
]


def suspect_reasons(study: str) -> list[str]:
    """Why rows of ``study`` are marked ``suspect`` (empty if none are)."""
    return [entry.reason for entry in SUSPECT_ROWS if entry.study == study]


@dataclass(frozen=True)
class StudyConfig:
    """One measured array configuration of a study."""

    name: str
    drives: int
    stripe_unit_bytes: int
    # Overrides of the controller preset for this configuration only, with the reason
    # in the study definition (e.g. a pass-through disk that skips the RAID driver).
    controller_overrides: Mapping[str, Any] = field(default_factory=dict)
    # Configurations with the same figure name share one figure (their rows are the
    # same measurement, e.g. one disk listed under every stripe unit). None: own name.
    figure: str | None = None


@dataclass(frozen=True)
class Study:
    """A published measurement and how to reproduce it."""

    name: str
    title: str
    drive: str
    controller: str
    length_bytes: int
    load_measured: Callable[[], pd.DataFrame]
    configs: Callable[[pd.DataFrame], list[StudyConfig]]

    def describe(self) -> str:
        return f"{self.title}: {self.drive} on {self.controller}"


def _reference_csv(name: str) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(io.StringIO(reference_data.read_text(name)))


# --- SSD RAID 0 (Davidovic et al., ATTO, ADATA SP900 on Intel H97 RST) ------------------

_SSD_STRIPE_UNIT_BYTES = 16 * 1024  # study: RAID 0 stripe unit 16 KB
# Configurations: "single" (one drive) or "raid0_N", a RAID 0 of N drives (the file has
# raid0_2 and raid0_3; any N a held-back row brings is simulated the same way).
_SSD_CONFIG = re.compile(r"raid0_([1-9][0-9]*)")


def _ssd_drives(name: str) -> int:
    """The drive count of SSD configuration ``name``: 1 for "single", N for "raid0_N"."""
    if name == "single":
        return 1
    match = _SSD_CONFIG.fullmatch(name)
    if match is None or int(match.group(1)) < 2:
        raise RaidlabError(
            "ssd_raid0_atto.csv: config",
            f"unknown configuration {name!r}: allowed are 'single' (one drive) and "
            "'raid0_N' (a RAID 0 of N >= 2 drives, e.g. raid0_2)",
        )
    return int(match.group(1))


def _ssd_measured() -> pd.DataFrame:
    import pandas as pd

    raw = _reference_csv("ssd_raid0_atto.csv")
    # The 65536 KiB rows are real rows of the file (an 18th value the paper prints);
    # their `note` says the size is assumed. They are kept and simulated like the rest.
    return pd.DataFrame(
        {
            "config": raw["config"],
            "op": raw["op"],
            "qd": raw["qd"].astype(int),
            "block_bytes": (raw["block_kib"] * 1024).round().astype(int),
            "measured_mbps": raw["mbps"].astype(float),
        }
    )


def _ssd_configs(measured: pd.DataFrame) -> list[StudyConfig]:
    configs = []
    for name in sorted(measured["config"].unique(), key=lambda n: (_ssd_drives(n), n)):
        overrides: dict[str, Any] = {}
        if name == "single":
            # The single SSD is a pass-through disk: RST's read-ahead and its strips
            # belong to RAID volumes (README: small sequential reads are much faster on
            # the array "because the array driver reads ahead", not on one drive), so
            # its commands are the host's, not one per 16 KiB strip.
            overrides = {"read_ahead_bytes": 0, "member_commands": "merged"}
        configs.append(StudyConfig(name, _ssd_drives(name), _SSD_STRIPE_UNIT_BYTES, overrides))
    return configs


# --- HDD RAID 0 (Davidovic et al., ATTO, Hitachi Deskstar on Dell PERC 6/i) -------------

# A single disk has no striping; every su_kib's single-disk rows are the same
# measurement, simulated once per queue depth with this (irrelevant) stripe unit.
_SINGLE_DISK_STRIPE_UNIT_BYTES = 1 << 20


def _hdd_config_name(disks: int, su_kib: int) -> str:
    return f"single_su{su_kib}K" if disks == 1 else f"raid0_{disks}_su{su_kib}K"


def _hdd_measured() -> pd.DataFrame:
    import pandas as pd

    raw = _reference_csv("hdd_raid0_atto.csv")
    # Any drive count and stripe unit is a configuration (raid0_{disks}_su{su_kib}K);
    # only values no array can have are refused.
    for column in ("disks", "su_kib"):
        bad = raw[~(pd.to_numeric(raw[column], errors="coerce") >= 1)]
        if len(bad):
            raise RaidlabError(
                f"hdd_raid0_atto.csv: {column}",
                f"{bad[column].iloc[0]!r} (data row {bad.index[0] + 1}): allowed is a whole "
                "number >= 1",
            )
    return pd.DataFrame(
        {
            "config": [
                _hdd_config_name(d, s) for d, s in zip(raw["disks"], raw["su_kib"], strict=True)
            ],
            "op": raw["op"],
            "qd": raw["qd"].astype(int),
            "block_bytes": (raw["block_kib"] * 1024).round().astype(int),
            # `kbps` is kilobytes per second (README): 142217 for 8 MiB reads is 142 MB/s.
            "measured_mbps": raw["kbps"].astype(float) / 1000.0,
            "disks": raw["disks"].astype(int),
            "su_kib": raw["su_kib"].astype(int),
        }
    )


def _hdd_configs(measured: pd.DataFrame) -> list[StudyConfig]:
    pairs = measured[["config", "disks", "su_kib"]].drop_duplicates()
    # The paper lists the single disk under every stripe unit; one figure shows it.
    return [
        StudyConfig(
            row.config,
            int(row.disks),
            _SINGLE_DISK_STRIPE_UNIT_BYTES if row.disks == 1 else int(row.su_kib) * 1024,
            figure="single" if row.disks == 1 else None,
        )
        for row in pairs.sort_values(["disks", "su_kib"]).itertuples()
    ]


STUDIES: dict[str, Study] = {
    "ssd-raid0-atto": Study(
        name="ssd-raid0-atto",
        title="SSD RAID 0, ATTO (Davidovic et al.), stripe 16K, 32 GiB file",
        drive="adata-sp900-128g",
        controller="intel-h97-rst",
        length_bytes=32 << 30,
        load_measured=_ssd_measured,
        configs=_ssd_configs,
    ),
    "hdd-raid0-atto": Study(
        name="hdd-raid0-atto",
        title="HDD RAID 0, ATTO (Davidovic et al.), 512 MB file, drive write cache off",
        drive="hitachi-deskstar-250g",
        controller="dell-perc6i",
        # ATTO's "512 MB" file size is 512 MiB (ATTO counts in powers of 1024).
        length_bytes=512 << 20,
        load_measured=_hdd_measured,
        configs=_hdd_configs,
    ),
}


def get_study(name: str, label: str = "study") -> Study:
    """The ATTO study ``name``; an unknown name suggests any study, claims included."""
    if name not in STUDIES:
        from raidlab.studies.claim_studies import CLAIM_STUDIES
        from raidlab.studies.raidix_cache import STUDY as RAIDIX_CACHE

        known = [*STUDIES, *CLAIM_STUDIES, RAIDIX_CACHE]
        raise RaidlabError(label, unknown_name_message("study", name, known))
    return STUDIES[name]


def _role(study: str, config: StudyConfig, op: str, qd: int, block_bytes: int) -> str:
    for suspect in SUSPECT_ROWS:
        if (suspect.study, suspect.drives, suspect.qd) == (study, config.drives, qd):
            return "suspect"
    if config.drives == 1:
        return "calibration"
    if any(entry.matches(config, op, qd, block_bytes) for entry in study_calibrations(study)):
        return "calibration"
    return "prediction"


def row_roles(study: Study, measured: pd.DataFrame) -> list[str]:
    """The role of each row of ``measured`` (rows of ``study``), in order."""
    configs = {config.name: config for config in study.configs(study.load_measured())}
    return [
        _role(study.name, configs[row.config], row.op, int(row.qd), int(row.block_bytes))
        for row in measured.itertuples()
    ]


@dataclass(frozen=True)
class _SimKey:
    """What determines a simulation: rows that share a key share one run."""

    config: StudyConfig
    op: str
    qd: int
    block_bytes: int


def study_scenarios(
    study: Study,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: int = 1,
    measured: pd.DataFrame | None = None,
    array_overrides: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, list[_SimKey], list[dict[str, Any]]]:
    """The measured rows (with a `_key` column) and one scenario per distinct run.

    ``measured``: only these rows of the study (default: all). ``array_overrides``:
    controller fields set on every array configuration (not on single drives), under
    the configuration's own overrides: what cross-validation refits."""
    all_measured = study.load_measured()
    measured = all_measured if measured is None else measured
    configs = {config.name: config for config in study.configs(all_measured)}
    arrays: dict[str, dict[str, Any]] = {}
    for name in measured["config"].unique():
        config = configs[name]
        # A configuration's own overrides (e.g. a pass-through disk) win.
        overrides = dict(array_overrides or {}) if config.drives > 1 else {}
        overrides.update(config.controller_overrides)
        controller: Any = study.controller
        if overrides:
            controller = {"preset": study.controller, **overrides}
        arrays[config.name] = build_array(
            ArrayRequest(
                level=0,
                drives=config.drives,
                stripe_unit=config.stripe_unit_bytes,
                drive=study.drive,
                controller=controller,
            )
        )
    keys: dict[tuple[Any, ...], _SimKey] = {}
    row_keys = []
    for row in measured.itertuples():
        config = configs[row.config]
        # Single-drive rows do not depend on the stripe unit or the config name.
        identity = (
            (config.drives, tuple(sorted(config.controller_overrides.items())))
            if config.drives == 1
            else (config.name,)
        )
        identity = (*identity, row.op, int(row.qd), int(row.block_bytes))
        if identity not in keys:
            keys[identity] = _SimKey(config, row.op, int(row.qd), int(row.block_bytes))
        row_keys.append(identity)
    measured = measured.assign(_key=row_keys)
    key_list = list(keys.values())
    scenarios = [
        atto_scenario(
            arrays[key.config.name],
            key.op,
            key.qd,
            key.block_bytes,
            study.length_bytes,
            ios_max,
            seed,
        )
        for key in key_list
    ]
    return measured, key_list, scenarios


def simulate_rows(
    study: Study,
    measured: pd.DataFrame | None = None,
    array_overrides: Mapping[str, Any] | None = None,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: int = 1,
    run: Callable[[list[dict[str, Any]], str], list[dict[str, Any]]] | None = None,
    description: str = "simulating",
) -> tuple[pd.DataFrame, pd.Series]:
    """The rows ``measured`` (default: every row of ``study``) and their simulated MB/s
    (a Series on the same index), one simulation per distinct run. ``run`` runs a list
    of scenarios (default: run_scenarios inline, no progress bar)."""
    import pandas as pd

    measured, keys, scenarios = study_scenarios(study, ios_max, seed, measured, array_overrides)
    if run is None:
        results = run_scenarios(scenarios, jobs=1, progress=False)
    else:
        results = run(scenarios, description)
    identities = list(dict.fromkeys(measured["_key"]))
    assert len(identities) == len(keys) == len(results), "one run per distinct key"
    simulated = {
        identity: op_metrics(result["ops"][key.op])["mbps"]
        for identity, key, result in zip(identities, keys, results, strict=True)
    }
    values = [simulated[key] for key in measured["_key"]]
    return measured, pd.Series(values, index=measured.index, dtype=float)


def reproduce_study(
    name: str,
    jobs: int | None = None,
    ios_max: int = IOS_MAX_DEFAULT,
    seed: int = 1,
    executor: Executor | None = None,
    progress: bool = True,
    simulator: Simulator | None = None,
) -> pd.DataFrame:
    """Measured vs simulated for every row of study ``name`` (columns STUDY_COLUMNS)."""
    import pandas as pd

    study = get_study(name)
    run = runner(jobs, executor, progress, simulator)

    measured, simulated = simulate_rows(
        study, ios_max=ios_max, seed=seed, run=run, description=f"reproducing {name}"
    )
    configs = {config.name: config for config in study.configs(measured)}
    frame = pd.DataFrame(
        {
            "study": name,
            "config": measured["config"],
            "op": measured["op"],
            "qd": measured["qd"],
            "block_bytes": measured["block_bytes"],
            "measured_mbps": measured["measured_mbps"],
            "simulated_mbps": simulated,
        }
    )
    frame["error_pct"] = error_pct(frame["measured_mbps"], frame["simulated_mbps"])
    frame["role"] = row_roles(study, frame)
    frame = frame[STUDY_COLUMNS].copy()
    # Context a summary or a figure needs, carried with the rows.
    frame.attrs["study"] = name
    frame.attrs["title"] = study.title
    frame.attrs["drive"] = study.drive
    frame.attrs["controller"] = study.controller
    frame.attrs["drive_counts"] = {config.name: config.drives for config in configs.values()}
    frame.attrs["stripe_units"] = {
        config.name: config.stripe_unit_bytes for config in configs.values()
    }
    frame.attrs["figures_of"] = {
        config.name: config.figure or config.name for config in configs.values()
    }
    frame.attrs["suspect_reasons"] = suspect_reasons(name)
    frame.attrs["seed"] = seed
    return frame


# --- error statistics ------------------------------------------------------------------


def error_pct(measured: pd.Series, simulated: pd.Series) -> pd.Series:
    """100 * (simulated - measured) / measured; NaN where measured is 0."""
    measured = measured.astype(float)
    return 100.0 * (simulated.astype(float) - measured) / measured.where(measured != 0)


def mape(measured: pd.Series, simulated: pd.Series) -> float:
    """Mean absolute percentage error over rows whose measured value is not 0."""
    errors = error_pct(measured, simulated).abs().dropna()
    return float(errors.mean()) if len(errors) else float("nan")


def naive_mbps(frame: pd.DataFrame, drive_counts: Mapping[str, int]) -> pd.Series:
    """The "N x one drive" model: the measured single-drive value with the same op, qd
    and transfer size, times the array's drive count. NaN where no single-drive row
    exists (e.g. a queue depth only measured on the array)."""
    import pandas as pd

    drives = frame["config"].map(drive_counts)
    single = frame[drives == 1]
    single_value = single.groupby(["op", "qd", "block_bytes"])["measured_mbps"].first()
    index = pd.MultiIndex.from_frame(frame[["op", "qd", "block_bytes"]])
    return pd.Series(single_value.reindex(index).to_numpy() * drives.to_numpy(), index=frame.index)


@dataclass(frozen=True)
class StudySummary:
    """Error statistics of one reproduced study."""

    per_config: pd.DataFrame
    mape_prediction_pct: float
    mape_calibration_pct: float
    rows_prediction: int
    rows_calibration: int
    mape_suspect_pct: float
    rows_suspect: int
    suspect_reasons: list[str]
    rows_skipped: int
    worst_row: dict[str, Any] | None
    naive_mape_prediction_pct: float
    model_mape_on_naive_rows_pct: float
    naive_rows: int


def summarize(
    frame: pd.DataFrame,
    drive_counts: Mapping[str, int] | None = None,
) -> StudySummary:
    """MAPE per (config, op, qd) and per role, the worst row, and the naive model.
    Suspect rows count in neither the calibration nor the prediction MAPE."""
    import pandas as pd

    drive_counts = dict(drive_counts or frame.attrs.get("drive_counts", {}))
    usable = frame[frame["measured_mbps"] != 0]
    groups = []
    for (config, op, qd, role), group in usable.groupby(["config", "op", "qd", "role"], sort=False):
        groups.append(
            {
                "config": config,
                "op": op,
                "qd": qd,
                "role": role,
                "rows": len(group),
                "mape_pct": mape(group["measured_mbps"], group["simulated_mbps"]),
            }
        )
    per_config = pd.DataFrame(groups, columns=SUMMARY_COLUMNS)
    prediction = usable[usable["role"] == "prediction"]
    calibration = usable[usable["role"] == "calibration"]
    suspect = usable[usable["role"] == "suspect"]
    worst_pool = prediction if len(prediction) else usable
    worst_row = None
    if len(worst_pool):
        worst_row = worst_pool.loc[worst_pool["error_pct"].abs().idxmax()].to_dict()
    # The naive model needs the single-drive rows, so it is computed on the whole frame
    # (less the suspect rows: a doubtful measurement makes no baseline).
    trusted = usable[usable["role"] != "suspect"]
    naive = (
        naive_mbps(trusted, drive_counts).loc[prediction.index]
        if drive_counts
        else pd.Series(float("nan"), index=prediction.index)
    )
    has_naive = naive.notna()
    return StudySummary(
        per_config=per_config,
        mape_prediction_pct=mape(prediction["measured_mbps"], prediction["simulated_mbps"]),
        mape_calibration_pct=mape(calibration["measured_mbps"], calibration["simulated_mbps"]),
        rows_prediction=len(prediction),
        rows_calibration=len(calibration),
        mape_suspect_pct=mape(suspect["measured_mbps"], suspect["simulated_mbps"]),
        rows_suspect=len(suspect),
        suspect_reasons=list(frame.attrs.get("suspect_reasons", [])),
        rows_skipped=len(frame) - len(usable),
        worst_row=worst_row,
        naive_mape_prediction_pct=mape(
            prediction.loc[has_naive, "measured_mbps"], naive[has_naive]
        ),
        model_mape_on_naive_rows_pct=mape(
            prediction.loc[has_naive, "measured_mbps"], prediction.loc[has_naive, "simulated_mbps"]
        ),
        naive_rows=int(has_naive.sum()),
    )


def plain(value: Any) -> Any:
    """A cell as plain JSON-ready data: numpy scalars become Python ones, NaN None."""
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def runner(
    jobs: int | None,
    executor: Executor | None,
    progress: bool,
    simulator: Simulator | None,
) -> Callable[[list[dict[str, Any]], str], list[dict[str, Any]]]:
    """``run(scenarios, description)`` through run_scenarios with these settings."""

    def run(scenarios: list[dict[str, Any]], description: str) -> list[dict[str, Any]]:
        return run_scenarios(
            scenarios,
            jobs=jobs,
            executor=executor,
            progress=progress,
            description=description,
            simulator=simulator,
        )

    return run


def summary_dict(summary: StudySummary) -> dict[str, Any]:
    """``summary`` as plain JSON-ready data (NaN becomes None)."""
    import pandas as pd

    document: dict[str, Any] = {}
    for item in fields(summary):
        value = getattr(summary, item.name)
        if isinstance(value, pd.DataFrame):
            value = [
                {key: plain(cell) for key, cell in record.items()}
                for record in value.to_dict(orient="records")
            ]
        elif isinstance(value, Mapping):
            value = {key: plain(cell) for key, cell in value.items()}
        elif isinstance(value, list):
            value = [plain(cell) for cell in value]
        else:
            value = plain(value)
        document[item.name] = value
    return document
