"""Running many scenarios: batches handed to workers costliest first, results back in
input order whatever the batching, and a command line that starts without pandas."""

from __future__ import annotations

import itertools
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from raidlab.scenario.executor import batches, run_scenarios, scenario_cost


def _scenario(index: int, bs: int, ios: int = 1000) -> dict[str, Any]:
    return {
        "seed": index,
        "array": {"stripe_unit_bytes": 16384},
        "workload": {"ios": ios, "warmup_ios": 0, "bs": [[bs, 1]]},
    }


def _echo(scenario: dict[str, Any]) -> dict[str, Any]:
    return {"seed": scenario["seed"]}


def test_a_scenario_costs_its_ios_times_the_strips_each_spans() -> None:
    small = scenario_cost(_scenario(0, 512))
    big = scenario_cost(_scenario(0, 32 << 20))
    assert small == 1000 * (1 + 512 / 16384)
    assert big == 1000 * (1 + 2048)
    assert scenario_cost({}) > 0  # anything else still gets a positive cost


def test_batches_cover_every_index_once_and_put_the_costliest_first() -> None:
    costs = [1.0, 500.0, 2.0, 3.0, 400.0, 1.0, 1.0, 2.0]
    groups = batches(costs, 4)
    flat = [index for group in groups for index in group]
    assert sorted(flat) == list(range(len(costs)))
    assert groups[0] == [1] and groups[1] == [4]  # each big one alone, first
    assert len(groups) < len(costs)  # the small ones travel together
    assert all(costs[a] >= costs[b] for a, b in itertools.pairwise(flat))


def test_results_come_back_in_input_order_from_batches() -> None:
    scenarios = [_scenario(i, bs) for i, bs in enumerate([512, 32 << 20, 4096, 1 << 20] * 5)]
    with ThreadPoolExecutor(2) as pool:
        results = run_scenarios(scenarios, executor=pool, progress=False, simulator=_echo)
    assert [r["seed"] for r in results] == list(range(len(scenarios)))
    pooled = run_scenarios(scenarios, jobs=2, progress=False, simulator=_echo)
    assert pooled == results


def test_a_run_from_the_command_line_loads_neither_pandas_nor_numpy() -> None:
    # Start-up time is measured in `make bench` (benches/bench_cli.py); this only keeps
    # the heavy modules off the path of a plain `raidlab run`.
    probe = (
        "import sys\n"
        "from raidlab.cli import main\n"
        "sys.argv = ['raidlab', 'run', '--drive', 'adata-sp900-128g', '--ios', '1']\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_the_help_names_every_study() -> None:
    from raidlab import api
    from raidlab.studies import STUDY_NAMES

    assert list(STUDY_NAMES) == api.study_names()
