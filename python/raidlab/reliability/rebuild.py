"""The rebuild time of an array, from a simulated rebuild competing with a workload.

The simulator rebuilds one failed member a stripe unit at a time at the rebuild's rate
limit, sharing the drives with the workload (``crates/raidlab-sim/src/controller/rebuild.rs``),
and reports how far it got (``results["rebuild"]``). A run of a few thousand host I/Os
rebuilds a sample of the member; its ``time_ns_projected`` is the whole member's
rebuild at the rate the sample achieved (or the measured time, when the run rebuilt
the whole member). A rebuild of a 2 TB drive is never simulated byte by byte: the
projection assumes the workload keeps its pace across the member.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.scenario import limits
from raidlab.scenario.array import build_scenario
from raidlab.scenario.native import array_info
from raidlab.scenario.workloads import WorkloadRequest, build_workload

# md's default ceiling on a resync's speed: /proc/sys/dev/raid/speed_limit_max,
# 200,000 KiB/s (Linux Documentation/admin-guide/md.rst, "speed_limit_max").
MD_SPEED_LIMIT_MAX_BYTES_PER_S = 200_000 * 1024
# The member that fails in the simulated rebuild (every member of these layouts is
# alike; member 0 carries RAID 4's data, not its parity).
FAILED_MEMBER = 0
NS_PER_HOUR = 3_600 * 10**9


@dataclass(frozen=True)
class RebuildEstimate:
    """A member's rebuild: ``hours`` for its ``member_bytes`` at ``mbps``; ``finished``
    when the run rebuilt it all (else projected from ``sample_bytes``)."""

    hours: float
    member_bytes: int
    mbps: float
    finished: bool
    sample_bytes: int
    rate_limit_bytes_per_s: float

    def document(self) -> dict[str, Any]:
        return {
            "hours": self.hours,
            "member_bytes": self.member_bytes,
            "mbps": self.mbps,
            "finished": self.finished,
            "projected": not self.finished,
            "sample_bytes": self.sample_bytes,
            "rate_limit_bytes_per_s": self.rate_limit_bytes_per_s,
            "source": "simulated",
        }


def rebuild_scenario(
    array: Mapping[str, Any],
    workload: WorkloadRequest,
    rate_bytes_per_s: float,
    seed: int,
    rate_label: str = "rebuild_rate",
    hot_spare: bool = False,
) -> dict[str, Any]:
    """The scenario of ``array`` (healthy) with member 0 failed and being rebuilt at
    ``rate_bytes_per_s`` while ``workload`` runs (onto a hot spare with ``hot_spare``)."""
    limits.check(
        limits.field("array.rebuild.rate_bytes_per_s"),
        float(rate_bytes_per_s),
        rate_label,
    )
    degraded = rebuilding_array(array, rate_bytes_per_s, hot_spare)
    return build_scenario(degraded, build_workload(workload, degraded), seed)


def rebuilding_array(
    array: Mapping[str, Any], rate_bytes_per_s: float, hot_spare: bool = False
) -> dict[str, Any]:
    """``array`` (healthy) with member 0 failed and being rebuilt at ``rate_bytes_per_s``
    (onto a hot spare, ``array.spares``, with ``hot_spare``). The failure is at the
    run's start: when it happens does not change the rate the rebuild reaches."""
    degraded = {
        **{key: value for key, value in array.items() if key not in ("failed", "rebuild")},
        "failed": [FAILED_MEMBER],
        "rebuild": {"member": FAILED_MEMBER, "rate_bytes_per_s": float(rate_bytes_per_s)},
    }
    if hot_spare:
        degraded["spares"] = max(1, int(array.get("spares", 0)))
    return degraded


def rebuild_estimate(
    results: Mapping[str, Any], rate_bytes_per_s: float, label: str
) -> RebuildEstimate:
    """The rebuild's figures from a rebuild scenario's results."""
    report = results.get("rebuild")
    assert report is not None, "a rebuild scenario reports its rebuild"
    if not report["finished"] and report["bytes_done"] == 0:
        raise RaidlabError(
            label,
            "the simulated rebuild made no progress during the workload's sample; "
            "give more host I/Os or a higher rebuild rate",
        )
    return RebuildEstimate(
        hours=report["time_ns_projected"] / NS_PER_HOUR,
        member_bytes=int(report["member_bytes"]),
        mbps=float(report["mbps"]),
        finished=bool(report["finished"]),
        sample_bytes=int(report["bytes_done"]),
        rate_limit_bytes_per_s=float(rate_bytes_per_s),
    )


def member_bytes(array: Mapping[str, Any]) -> int:
    """Bytes of a member the array uses (what a rebuild writes and the survivors read)."""
    return int(array_info(dict(array))["member_used_bytes"])
