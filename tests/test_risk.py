"""Data-loss risk (docs/reliability.md): the Markov model and the Monte Carlo agree,
MTTDL moves the way redundancy says, the hot spare shortens MTTR, advise ranks and
filters by risk, bad input is one line."""

from __future__ import annotations

import json
import math

import pytest
from raidlab.cli import app
from raidlab.errors import RaidlabError
from raidlab.reliability import RiskOptions, assess, drive_figures, group_shape
from raidlab.reliability.markov import chain_mttdl_hours, closed_form_mttdl_hours
from raidlab.reliability.montecarlo import GroupModel, simulate_group
from raidlab.scenario.array import ArrayRequest, build_array
from raidlab.scenario.presets import reliability
from raidlab.scenario.workloads import WorkloadRequest
from raidlab.studies.advise import AdviseRequest, advise
from typer.testing import CliRunner

runner = CliRunner()
EPISODES = 100_000

# Small cases: failures frequent enough (MTTF / MTTR of 100) that second-order terms
# matter, so agreement checks the whole chain, not only its first-order limit.
SMALL_CASES = [
    # members, tolerance, failure per hour, MTTR hours, P(read error in the rebuild)
    (4, 1, 1e-3, 10.0, 0.0),
    (4, 1, 1e-3, 10.0, 0.2),
    (6, 2, 1e-3, 10.0, 0.0),
    (6, 2, 1e-3, 10.0, 0.3),
    (3, 2, 1e-3, 10.0, 0.0),  # a 3-way mirror
    (2, 1, 1e-4, 24.0, 0.05),  # a 2-way mirror
]


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: f"N{c[0]}-t{c[1]}-p{c[4]}")
def test_markov_chain_lies_within_the_monte_carlo_confidence_interval(case: tuple) -> None:
    members, tolerance, lam, mttr, p_ure = case
    chain = chain_mttdl_hours(members, tolerance, lam, 1 / mttr, p_ure)
    estimate = simulate_group(GroupModel(members, tolerance, lam, mttr, p_ure), EPISODES, 7)
    low, high = estimate.ci95_hours
    assert low <= chain <= high, (chain, estimate)
    # The interval is informative, not wide enough to agree with anything.
    assert high - low < 0.05 * chain


def test_the_closed_forms_are_the_chain_when_rebuilds_are_short() -> None:
    lam, mu = 1 / 1.2e6, 1 / 30
    for members, tolerance in ((4, 1), (12, 1), (8, 2), (12, 2)):
        for p in (0.0, 0.3):
            chain = chain_mttdl_hours(members, tolerance, lam, mu, p)
            closed = closed_form_mttdl_hours(members, tolerance, lam, mu, p)
            assert closed == pytest.approx(chain, rel=1e-3)
    # Patterson et al. 1988 for RAID 5 and Chen et al. 1994 for RAID 6, literally.
    mttf, mttr = 1.2e6, 30.0
    assert closed_form_mttdl_hours(8, 1, 1 / mttf, 1 / mttr) == pytest.approx(
        mttf**2 / (8 * 7 * mttr)
    )
    assert closed_form_mttdl_hours(8, 2, 1 / mttf, 1 / mttr) == pytest.approx(
        mttf**3 / (8 * 7 * 6 * mttr**2)
    )


def test_raid5_mttdl_falls_with_more_drives_and_raid6_is_far_above() -> None:
    lam, mu = 1 / 1e6, 1 / 30
    raid5 = [chain_mttdl_hours(n, 1, lam, mu) for n in (4, 8, 12)]
    raid6 = [chain_mttdl_hours(n, 2, lam, mu) for n in (4, 8, 12)]
    assert raid5[0] > raid5[1] > raid5[2]
    assert all(r6 > 1000 * r5 for r5, r6 in zip(raid5, raid6, strict=True))


def test_fixed_rebuild_times_double_raid6_mttdl_but_not_raid5() -> None:
    # md rebuilds every failed drive in exactly MTTR, together: a third failure must
    # land in the overlap of two windows, half the chain's exponential overlap.
    lam, mttr = 1e-4, 10.0
    raid6_chain = chain_mttdl_hours(6, 2, lam, 1 / mttr)
    raid6 = simulate_group(GroupModel(6, 2, lam, mttr), EPISODES, 3, repair="fixed")
    assert 1.7 < raid6.mttdl_hours / raid6_chain < 2.3
    raid5_chain = chain_mttdl_hours(6, 1, lam, 1 / mttr)
    raid5 = simulate_group(GroupModel(6, 1, lam, mttr), EPISODES, 3, repair="fixed")
    assert raid5.mttdl_hours == pytest.approx(raid5_chain, rel=0.03)


def test_latent_errors_cost_mttdl_and_a_scrub_wins_it_back() -> None:
    base = GroupModel(8, 1, 1 / 5e5, 30.0, p_ure=0.01)

    def mttdl(**changes: object) -> float:
        model = GroupModel(**{**base.__dict__, **changes})
        return simulate_group(model, EPISODES, 11).mttdl_hours

    none = mttdl()
    unscrubbed = mttdl(latent_per_hour=1 / 9259, latent_age_hours_max=5 * 8766)
    weekly = mttdl(latent_per_hour=1 / 9259, scrub_interval_hours=168.0)
    assert unscrubbed < weekly < none


def test_correlated_failures_shorten_mttdl() -> None:
    base = GroupModel(8, 2, 1 / 5e5, 30.0)
    independent = simulate_group(base, EPISODES, 5).mttdl_hours
    batch = simulate_group(GroupModel(**{**base.__dict__, "batch_factor": 10.0}), EPISODES, 5)
    # Two further failures, each ten times likelier: about a hundredth of the MTTDL.
    assert 50 < independent / batch.mttdl_hours < 200


def test_the_monte_carlo_is_replayable_from_its_seed() -> None:
    model = GroupModel(6, 2, 1e-3, 10.0, 0.3)
    assert simulate_group(model, 10_000, 42) == simulate_group(model, 10_000, 42)
    assert simulate_group(model, 10_000, 42) != simulate_group(model, 10_000, 43)


def test_groups_of_each_level() -> None:
    def shape(level: int, drives: int) -> tuple[float, int, int]:
        array = build_array(ArrayRequest(level=level, drives=drives, drive="intel-dc-s3500-80g"))
        found = group_shape(array)
        return found.groups, found.members, found.tolerance

    assert shape(0, 4) == (1, 4, 0)
    assert shape(1, 3) == (1, 3, 2)
    assert shape(5, 6) == (1, 6, 1)
    assert shape(6, 6) == (1, 6, 2)
    assert shape(10, 6) == (3, 2, 1)
    assert shape(50, 8) == (2, 4, 1)
    assert shape(60, 8) == (2, 4, 2)


def _ssd_raid5() -> dict:
    return build_array(ArrayRequest(level=5, drives=4, drive="intel-dc-s3500-80g"))


LIGHT = WorkloadRequest(rw="randread", bs="4K", iodepth=1, ios=2000)


def test_the_rebuild_is_simulated_and_a_hot_spare_drops_the_replacement_delay() -> None:
    options = RiskOptions(mtbf_hours=1e6, ure=1e16, replace_after="24h", episodes=10_000)
    delayed = assess(_ssd_raid5(), "intel-dc-s3500-80g", LIGHT, options, 50 * 2**20)
    spare = assess(
        _ssd_raid5(),
        "intel-dc-s3500-80g",
        LIGHT,
        RiskOptions(**{**options.__dict__, "hot_spare": True}),
        50 * 2**20,
    )
    rebuild = delayed["rebuild"]
    assert rebuild["source"] == "simulated" and rebuild["sample_bytes"] > 0
    # 80 GB at no more than the 50 MiB/s limit: at least 80e9 / 52.4e6 s.
    assert rebuild["hours"] >= 80e9 / (50 * 2**20) / 3600 * 0.99
    assert delayed["mttr_hours"] == pytest.approx(rebuild["hours"] + 24)
    assert spare["mttr_hours"] == pytest.approx(spare["rebuild"]["hours"])
    assert spare["mttdl_hours"] > delayed["mttdl_hours"]
    assert spare["p_loss"] < delayed["p_loss"]


def test_a_faster_rebuild_limit_shortens_the_simulated_rebuild() -> None:
    options = RiskOptions(mtbf_hours=1e6, ure=1e16, episodes=10_000)
    slow = assess(_ssd_raid5(), "intel-dc-s3500-80g", LIGHT, options, 10 * 2**20)
    fast = assess(_ssd_raid5(), "intel-dc-s3500-80g", LIGHT, options, 100 * 2**20)
    assert fast["rebuild"]["hours"] < slow["rebuild"]["hours"] / 3


def test_risk_command_json_carries_the_issue_keys_and_both_methods() -> None:
    result = runner.invoke(
        app,
        [
            "risk", "--drive", "intel-dc-s3500-80g", "--level", "6", "--drives", "6",
            "--afr", "0.44", "--ure", "1e17", "--rebuild-hours", "2",
            "--episodes", "20000", "--format", "json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    for key in ("mtbf_hours", "mttr_hours", "mttdl_hours", "mttdl_with_ure_hours", "p_loss"):
        assert isinstance(document[key], float), key
    assert document["mttr_hours"] == pytest.approx(26.0)
    mc = document["monte_carlo"]
    assert mc["agrees_with_markov"] is True
    low, high = mc["mttdl_ci95_hours"]
    assert low <= document["mttdl_hours"] <= high


def test_risk_command_table() -> None:
    result = runner.invoke(
        app,
        [
            "risk", "--drive", "intel-dc-s3500-80g", "--level", "5", "--drives", "4",
            "--mtbf-hours", "2e6", "--ure", "1e17", "--ios", "1000", "--episodes", "10000",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "MTTDL, with read errors" in result.output and "simulated" in result.output


MTBF = ["--mtbf-hours", "1e6"]


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        ([*MTBF, "--ure", "lots"], "--ure"),
        ([*MTBF, "--ure", "1e3"], "--ure"),
        (["--ure", "1e15", "--afr", "150"], "--afr"),
        (["--ure", "1e15", "--mtbf-hours", "-5"], "--mtbf-hours"),
        ([*MTBF, "--ure", "1e15", "--afr", "1"], "--afr"),
        ([*MTBF, "--ure", "1e15", "--mission-years", "0"], "--mission-years"),
        ([*MTBF, "--ure", "1e15", "--replace-after", "soon"], "--replace-after"),
        ([*MTBF, "--ure", "1e15", "--repair", "magic"], "--repair"),
        ([*MTBF, "--ure", "1e15", "--episodes", "10"], "--episodes"),
        ([*MTBF, "--ure", "1e15", "--failed", "1"], "--failed"),
        ([*MTBF, "--ure", "1e15", "--rebuild-rate", "1"], "--rebuild-rate"),
        ([*MTBF, "--ure", "1e15", "--rebuild-hours", "x"], "--rebuild-hours"),
    ],
)
def test_bad_risk_input_is_one_line_and_status_2(flags: list, field: str) -> None:
    base = ["risk", "--drive", "intel-dc-s3500-80g", "--level", "5", "--drives", "4"]
    if "--rebuild-hours" not in flags:
        base += ["--rebuild-hours", "1"]
    result = runner.invoke(app, [*base, *flags])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}"), result.output


def test_a_drive_without_failure_figures_asks_for_the_flags() -> None:
    labels = {"mtbf_hours": "--mtbf-hours", "ure": "--ure", "afr": "--afr"}
    with pytest.raises(RaidlabError, match="give --mtbf-hours or --afr"):
        drive_figures(None, RiskOptions(ure=1e15, labels=labels))
    with pytest.raises(RaidlabError, match="give --ure"):
        drive_figures(None, RiskOptions(afr=0.5, labels=labels))
    figures = drive_figures(None, RiskOptions(afr=0.5, ure=1e15, labels=labels))
    assert figures.sources == {"mtbf_hours": "--afr", "ure_per_bits": "--ure"}
    # AFR 0.5 %/year, failures exponential: 8766 h / -ln(0.995).
    assert figures.mtbf_hours == pytest.approx(8766 / -math.log(0.995))


ADVISE_WORKLOAD = WorkloadRequest(rw="randread", bs="4K", iodepth=4, ios=400)
# Hard disks: no flash to precondition, so each candidate simulates in a blink.
ADVISE_DRIVE = "wd-caviar-blue-500g"
ADVISE_RISK = RiskOptions(mtbf_hours=1e6, ure=1e14)


@pytest.fixture(scope="module")
def ranked_by_risk() -> object:
    request = AdviseRequest(ADVISE_DRIVE, 4, metric="risk", risk=ADVISE_RISK)
    return advise(request, ADVISE_WORKLOAD, jobs=1, progress=False)


def test_advise_ranks_by_risk_with_a_reliability_column(ranked_by_risk: object) -> None:
    frame = ranked_by_risk
    assert list(frame["p_loss"]) == sorted(frame["p_loss"])
    assert frame.iloc[-1]["level"] == 0  # RAID 0 survives nothing
    assert (frame[frame["level"] == 0]["mttr_hours"].isna()).all()
    assert (frame[frame["level"] != 0]["mttr_hours"] > 24).all()
    raid6 = frame[frame["level"] == 6]["p_loss"].max()
    raid5 = frame[frame["level"] == 5]["p_loss"].min()
    assert raid6 < raid5
    assert "wins on p_loss" in frame.attrs["why"]


def test_advise_filters_by_the_probability_of_loss(ranked_by_risk: object) -> None:
    everything = ranked_by_risk
    limit = float(everything[everything["level"] == 5]["p_loss"].min()) * 1.01
    request = AdviseRequest(ADVISE_DRIVE, 4, risk=ADVISE_RISK, max_loss_probability=limit)
    kept = advise(request, ADVISE_WORKLOAD, jobs=1, progress=False)
    assert (kept["p_loss"] <= limit).all()
    assert 0 not in set(kept["level"]) and 5 in set(kept["level"])
    assert len(kept) < len(everything)
    # Ranked by the default metric, IOPS, within the filter.
    assert list(kept["iops"]) == sorted(kept["iops"], reverse=True)


def test_advise_shows_the_risk_column_where_the_preset_has_failure_figures() -> None:
    result = runner.invoke(
        app,
        ["advise", "--drive", "hitachi-deskstar-250g", "--drives", "2", "--ios", "300"],
    )
    assert result.exit_code == 0, result.output
    figures = reliability("hitachi-deskstar-250g")
    has_figures = ("mtbf_hours" in figures or "afr_percent" in figures) and (
        "ure_per_bits" in figures
    )
    assert ("P(loss)" in result.output) == has_figures


def test_advise_max_loss_probability_no_candidate_meets_is_one_line() -> None:
    result = runner.invoke(
        app,
        [
            "advise", "--drive", "hitachi-deskstar-250g", "--drives", "2", "--ios", "300",
            "--mtbf-hours", "1e4", "--ure", "1e14", "--max-loss-probability", "1e-12",
        ],
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: --max-loss-probability: no candidate")


def test_an_array_with_a_hot_spare_fails_a_member_during_the_run() -> None:
    from raidlab import api

    common = {"drive": "intel-dc-s3500-80g", "level": 5, "drives": 4, "failed": "1"}
    array = api.resolve_array(**common, rebuild_rate="100M", spares=1, fail_at="5ms")
    assert array["spares"] == 1
    assert array["rebuild"] == {"member": 1, "rate_bytes_per_s": 100 * 2**20,
                                "failed_at_ns": 5_000_000}  # fmt: skip
    with pytest.raises(RaidlabError, match="hot spare"):
        api.resolve_array(**common, rebuild_rate="100M", fail_at="5ms")
    # Arrays without spares read as before: no key.
    assert "spares" not in api.resolve_array(**common, rebuild_rate="100M")
