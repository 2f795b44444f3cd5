"""Mean time to data loss from the Markov model of a RAID group, closed form and exact.

A group of ``members`` drives survives ``tolerance`` concurrent failures (RAID 5: 1,
RAID 6: 2, an n-way mirror: n - 1). Each drive fails at rate ``failure_per_hour``
(1 / MTTF); a failed drive is rebuilt at rate ``repair_per_hour`` (1 / MTTR), one
rebuild at a time. The rebuild that runs while the group has no redundancy left reads
every survivor, and an unrecoverable read error there loses data
(``p_check``: the probability of one, :func:`read_error_probability`).

The closed forms are the classic first-order results (valid when MTTR << MTTF):

- Patterson, Gibson, Katz, "A Case for Redundant Arrays of Inexpensive Disks (RAID)",
  SIGMOD 1988, eq. for RAID 5: ``MTTDL = MTTF^2 / (N (N - 1) MTTR)``;
- Chen, Lee, Gibson, Katz, Patterson, "RAID: High-Performance, Reliable Secondary
  Storage", ACM Computing Surveys 26(2), 1994, section 3.4: the same for one failure,
  ``MTTF^3 / (N (N - 1) (N - 2) MTTR^2)`` for double-failure-correcting arrays
  (RAID 6, P+Q), and the term for an unrecoverable bit error while reconstructing:
  ``MTTDL = MTTF / (N · P_ure)`` when that dominates.

In general, for tolerance t: ``MTTDL ≈ MTTR^-t ... = μ^t / Π_{i=0..t} (N - i) λ``;
with the read error at the last level of redundancy,
``1 / MTTDL ≈ Π_{i<t} (N - i) λ / μ^(t-1) · ((N - t) λ / μ + P_ure)``.

:func:`chain_mttdl_hours` solves the same birth-death chain exactly (expected time to
absorption), as a sum of first-passage times, which stays accurate where a linear
solve of the chain would cancel catastrophically (a 4-way mirror: λ^4 against μ^3 λ).
"""

from __future__ import annotations

import math


def read_error_probability(bits_read: float, ure_per_bits: float) -> float:
    """Probability of at least one unrecoverable read error over ``bits_read`` at one
    error per ``ure_per_bits`` bits (errors as a Poisson process over the bits)."""
    assert bits_read >= 0 and ure_per_bits > 0
    return -math.expm1(-bits_read / ure_per_bits)


def closed_form_mttdl_hours(
    members: int,
    tolerance: int,
    failure_per_hour: float,
    repair_per_hour: float,
    p_check: float = 0.0,
) -> float:
    """The first-order closed form for one group (Patterson et al. 1988, Chen et al.
    1994; see the module's docs). ``tolerance`` 0 is RAID 0: ``MTTF / N``."""
    _check(members, tolerance, failure_per_hour, repair_per_hour, p_check)
    lam, mu = failure_per_hour, repair_per_hour
    if tolerance == 0:
        return 1.0 / (members * lam)
    reach = 1.0  # rate of reaching the last level of redundancy, over μ^(t-1)
    for i in range(tolerance):
        reach *= (members - i) * lam
    reach /= mu ** (tolerance - 1)
    return 1.0 / (reach * ((members - tolerance) * lam / mu + p_check))


def chain_mttdl_hours(
    members: int,
    tolerance: int,
    failure_per_hour: float,
    repair_per_hour: float,
    p_check: float = 0.0,
) -> float:
    """The exact expected time to data loss of the chain, from all drives working.

    ``τ_f``, the expected time from ``f`` failed drives to ``f + 1`` (first passage),
    is ``τ_0 = 1 / (N λ)`` and ``τ_f = (1 + r_f τ_(f-1)) / a_f`` with ``a_f`` the rate
    up (failures, plus at ``f = t`` the rebuild ending in a read error) and ``r_f``
    the rate back down; the MTTDL is their sum up to the loss."""
    _check(members, tolerance, failure_per_hour, repair_per_hour, p_check)
    lam, mu = failure_per_hour, repair_per_hour
    total = 0.0
    previous = 0.0
    for f in range(tolerance + 1):
        up = (members - f) * lam
        down = mu if f > 0 else 0.0
        if f == tolerance and f > 0:
            up += mu * p_check
            down = mu * (1.0 - p_check)
        passage = (1.0 + down * previous) / up
        total += passage
        previous = passage
    return total


def loss_probability(mttdl_hours: float, mission_hours: float) -> float:
    """Probability of data loss within ``mission_hours``: the time to loss of a group
    that returns to health after every rebuild is close to exponential when loss is
    rare (MTTDL >> MTTR), so ``1 - exp(-T / MTTDL)``."""
    if math.isinf(mttdl_hours):
        return 0.0
    if mttdl_hours <= 0.0:
        return 1.0
    return -math.expm1(-mission_hours / mttdl_hours)


def _check(members: int, tolerance: int, lam: float, mu: float, p_check: float) -> None:
    assert 0 <= tolerance < members, (members, tolerance)
    assert lam > 0 and mu > 0, (lam, mu)
    assert 0.0 <= p_check <= 1.0, p_check
