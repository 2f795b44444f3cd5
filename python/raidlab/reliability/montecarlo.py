"""Monte Carlo of a RAID group's failures, rebuilds and read errors, with the events the
closed forms leave out: latent sector errors found only by a scrub, correlated
(same-batch) failures, and rebuilds that take exactly their time (md) instead of an
exponential time.

The estimator is regenerative: a group that is back to all drives working forgets its
past, so the time to loss is a sequence of i.i.d. cycles, each a healthy period
(exponential, mean ``1 / (N λ)``) and a degraded episode that ends in repair or loss.
By Wald's identity ``MTTDL = E[cycle] / P(an episode loses data)``. Only episodes are
simulated, vectorised over numpy arrays, one step per event.

Losses are rare (one episode in 10^4 to 10^10), so the episodes are drawn with
*balanced failure biasing* (Shahabuddin, "Importance sampling for the simulation of
highly reliable Markovian systems", Management Science 40(3), 1994; Goyal et al.,
"A unified framework for simulating Markovian models of highly dependable systems",
IEEE Trans. Computers 41(1), 1992): failures during an episode, and the read-error
check, are made likely, and each episode carries the likelihood ratio that undoes
the bias, so the estimates stay unbiased and their confidence interval honest.

Repair models (``repair``):
- ``"markov"``: the closed forms' assumptions: rebuild times exponential with mean
  MTTR, one rebuild at a time. With no latent errors and no correlation, this
  simulates the same chain :mod:`raidlab.reliability.markov` solves, so the two must
  agree within the confidence interval (the tests check it).
- ``"fixed"``: as md does: every failed drive is back exactly MTTR after it failed,
  rebuilds running together. RAID 6 then loses data about half as often as the
  chain says (a third failure must land in the shorter overlap of two windows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

REPAIR_MODELS = ("markov", "fixed")
# Biased probability of a failure before the rebuild ends, and of the read-error check.
FAILURE_BIAS = 0.5
CHECK_BIAS = 0.5
# Events one episode may take; an episode still running after them is a bug.
EPISODE_STEPS_MAX = 10_000
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class GroupModel:
    """One RAID group's failure model (rates per hour)."""

    members: int
    tolerance: int
    failure_per_hour: float
    mttr_hours: float
    # Probability that the rebuild at the last level of redundancy hits a read error.
    p_ure: float = 0.0
    # Latent sector errors: rate per drive-hour at which a drive develops one.
    latent_per_hour: float = 0.0
    # Hours between scrubs (None: never, a defect stays until the drive is replaced,
    # its age taken as uniform over ``latent_age_hours_max``).
    scrub_interval_hours: float | None = None
    latent_age_hours_max: float = 0.0
    # Survivors of a failure fail this many times faster until it is rebuilt.
    batch_factor: float = 1.0


@dataclass(frozen=True)
class MonteCarloEstimate:
    """MTTDL of one group and its 95 % confidence interval, from ``episodes``."""

    mttdl_hours: float
    ci95_hours: tuple[float, float]
    episodes: int
    loss_per_episode: float


def simulate_group(
    model: GroupModel,
    episodes: int,
    seed: int,
    repair: str = "markov",
    progress: Callable[[float], None] | None = None,
) -> MonteCarloEstimate:
    """The group's MTTDL from ``episodes`` simulated degraded episodes (deterministic for
    a ``seed``). ``progress(fraction)`` is told after each step the fraction of episodes
    that have ended."""
    assert repair in REPAIR_MODELS, repair
    assert episodes >= 100, episodes
    lam = model.failure_per_hour
    if model.tolerance == 0:
        # Any failure loses data: every episode is a loss, at once.
        mttdl = 1.0 / (model.members * lam)
        return MonteCarloEstimate(mttdl, (mttdl, mttdl), episodes, 1.0)
    rng = np.random.default_rng(seed)
    run = _episodes_markov if repair == "markov" else _episodes_fixed
    weight_duration, weight_loss = run(model, episodes, rng, progress or _no_progress)
    return _ratio_estimate(1.0 / (model.members * lam), weight_duration, weight_loss)


def _no_progress(fraction: float) -> None:
    return None


def _ratio_estimate(
    healthy_hours: float, duration: np.ndarray, loss: np.ndarray
) -> MonteCarloEstimate:
    """``(healthy + E[D]) / P(loss)`` with a delta-method 95 % interval."""
    n = duration.size
    mean_d = float(duration.mean())
    p = float(loss.mean())
    if p <= 0.0:
        return MonteCarloEstimate(math.inf, (math.inf, math.inf), n, 0.0)
    ratio = (healthy_hours + mean_d) / p
    cov = np.cov(np.vstack([duration, loss]))
    variance = (cov[0, 0] + ratio**2 * cov[1, 1] - 2 * ratio * cov[0, 1]) / (n * p**2)
    half = Z_95 * math.sqrt(max(variance, 0.0))
    return MonteCarloEstimate(ratio, (max(ratio - half, 0.0), ratio + half), n, p)


def _check_probability(model: GroupModel, age_hours: np.ndarray) -> np.ndarray:
    """Probability that the rebuild at the last level of redundancy fails to read a
    sector: a read error over the survivors' bits, or a latent defect one of them
    developed since the last scrub (``age_hours``)."""
    survivors = model.members - model.tolerance
    latent = -np.expm1(-model.latent_per_hour * survivors * age_hours)
    return 1.0 - (1.0 - model.p_ure) * (1.0 - latent)


def _scrub_age(model: GroupModel, n: int, rng: np.random.Generator) -> np.ndarray:
    """Hours since the last scrub at each episode's start (a uniform phase)."""
    if model.latent_per_hour <= 0.0:
        return np.zeros(n)
    span = model.scrub_interval_hours or model.latent_age_hours_max
    return rng.random(n) * span


def _biased_check(p: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Whether each check fails (drawn with a bias) and the likelihood ratio."""
    biased = np.where((p > 0.0) & (p < CHECK_BIAS), CHECK_BIAS, p)
    failed = rng.random(p.size) < biased
    ratio = np.where(
        failed,
        np.divide(p, biased, out=np.ones_like(p), where=biased > 0),
        np.divide(1.0 - p, 1.0 - biased, out=np.ones_like(p), where=biased < 1),
    )
    return failed, ratio


def _episodes_markov(
    model: GroupModel, n: int, rng: np.random.Generator, progress: Callable[[float], None]
) -> tuple[np.ndarray, np.ndarray]:
    """The chain's episodes: exponential rebuilds, one at a time; the embedded jump
    chain is biased towards failures, holding times are drawn unbiased."""
    g, t = model.members, model.tolerance
    lam = model.failure_per_hour * model.batch_factor
    mu = 1.0 / model.mttr_hours
    failed = np.ones(n, dtype=np.int64)
    weight = np.ones(n)
    clock = np.zeros(n)
    loss = np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    age = _scrub_age(model, n, rng)
    for _ in range(EPISODE_STEPS_MAX):
        idx = np.flatnonzero(active)
        progress(1.0 - idx.size / n)
        if idx.size == 0:
            break
        f = failed[idx]
        up = (g - f) * lam
        p_up = up / (up + mu)
        biased = np.maximum(p_up, FAILURE_BIAS)
        clock[idx] += rng.standard_exponential(idx.size) / (up + mu)
        goes_up = rng.random(idx.size) < biased
        weight[idx] *= np.where(goes_up, p_up / biased, (1.0 - p_up) / (1.0 - biased))
        f = f + np.where(goes_up, 1, -1)
        lost = goes_up & (f > t)
        repaired_last = ~goes_up & (f == t - 1)
        if repaired_last.any():
            sub = idx[repaired_last]
            bad, ratio = _biased_check(_check_probability(model, age[sub] + clock[sub]), rng)
            weight[sub] *= ratio
            lost[repaired_last] = bad
        failed[idx] = f
        loss[idx] = lost
        active[idx] = ~lost & (f > 0)
    assert not active.any(), "an episode ran past EPISODE_STEPS_MAX events"
    return weight * clock, weight * loss


def _episodes_fixed(
    model: GroupModel, n: int, rng: np.random.Generator, progress: Callable[[float], None]
) -> tuple[np.ndarray, np.ndarray]:
    """md's episodes: each failed drive back exactly MTTR after its failure, rebuilds
    together. Failures of the survivors are drawn at a biased rate (at least one per
    MTTR) with the likelihood ratio of the exponential densities."""
    g, t = model.members, model.tolerance
    lam = model.failure_per_hour * model.batch_factor
    mttr = model.mttr_hours
    ends = np.full((n, t + 1), np.inf)
    ends[:, 0] = mttr
    failed = np.ones(n, dtype=np.int64)
    weight = np.ones(n)
    clock = np.zeros(n)
    loss = np.zeros(n, dtype=bool)
    active = np.ones(n, dtype=bool)
    age = _scrub_age(model, n, rng)
    for _ in range(EPISODE_STEPS_MAX):
        idx = np.flatnonzero(active)
        progress(1.0 - idx.size / n)
        if idx.size == 0:
            break
        f = failed[idx]
        rate = (g - f) * lam
        biased = np.maximum(rate, 1.0 / mttr)
        to_failure = rng.standard_exponential(idx.size) / biased
        slot = np.argmin(ends[idx], axis=1)
        to_repair = ends[idx, slot] - clock[idx]
        fails = to_failure < to_repair
        step = np.where(fails, to_failure, to_repair)
        weight[idx] *= np.exp(-(rate - biased) * step) * np.where(fails, rate / biased, 1.0)
        clock[idx] += step
        f = f + np.where(fails, 1, -1)
        lost = fails & (f > t)
        grow = idx[fails & ~lost]
        if grow.size:
            free = np.argmax(np.isinf(ends[grow]), axis=1)
            ends[grow, free] = clock[grow] + mttr
        repaired = ~fails
        done = idx[repaired]
        ends[done, slot[repaired]] = np.inf
        repaired_last = repaired & (f == t - 1)
        if repaired_last.any():
            sub = idx[repaired_last]
            bad, ratio = _biased_check(_check_probability(model, age[sub] + clock[sub]), rng)
            weight[sub] *= ratio
            lost[repaired_last] = bad
        failed[idx] = f
        loss[idx] = lost
        active[idx] = ~lost & (f > 0)
    assert not active.any(), "an episode ran past EPISODE_STEPS_MAX events"
    return weight * clock, weight * loss
