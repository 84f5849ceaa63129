"""Change points in a series of runs: where a figure stepped, whether that step is real, and how many false
alarms that costs (measured in benchmarks/history.py, docs/bench-history.md).

One test per series, on its lead metric (LEAD: mb_s_durable for writes, mb_s for reads, iops for metadata); the
other metrics are reported beside it at the same runs (`others`), never tested on their own: mb_s, mb_s_durable
and lat_p50 move together, and testing each would multiply the false alarms.

Judged on the logarithm of one value per run (the run's median): rates change by factors, and a factor keeps
the noise in per cent the same on both sides of a step, so the two segments share one variance there. Reps of one
run share that day's machine, so they say less about a change between runs than their number suggests.

The test (binary segmentation): in a piece of a series, every cut with at least MIN_SIZE runs on each side is
tried, and the one with the largest two-sample t statistic (Student's, the noise pooled within the two segments and
moderated by the noise of the other series of the call: noise_prior) is the candidate (its place: the cut of
highest posterior, which sets a step with few runs after it one run early less often). Its p-value is read against
the largest t of NULL_DRAWS simulated flat series of as many runs (normal noise; the statistic does not depend on its
level), so picking the best cut does not make the test anti-conservative. Welch's test would not do: with 3 runs
after a step it has about 2 degrees of freedom and misses even a 10 % step at 3 % noise. Tried and dropped: a
Bonferroni correction over the cuts (74 % of 10 % steps found in stores of 50 series, against 77 %); pulling wild
runs in to their neighbours' median first, and a permutation null (exact for any noise, ~20 ms a series): neither
lowered the false alarms under heavy-tailed noise; the likelihood ratio averaged over the cuts instead of its
largest (97.2 against 97.8 % of 10 % steps with 3 runs after them at p 0.05, 87.6 against 88.4 % at 0.01); a floor
of the pooled noise at the neighbour-difference noise; Storey's adaptive Benjamini–Hochberg (+1 point in stores
with steps, more alarms on their flat series; not measured again with the moderation below). The first candidate of
each series (and of each piece between marks) is one hypothesis; Benjamini–Hochberg at FDR across all of them in
one call sets the p-value a change must reach; a change whose medians differ by less than `min_change`
(history_min_change) is not reported whatever its p. Accepted, the segments on either side are searched again, at
the same p.

The moderation (limma's, Smyth 2004): 20 runs say little about a series' noise, and the 99th percentile of the
largest t over the cuts of 23 runs with the noise estimated is far above that with the noise known (3.9 against
3.3). The series of one call, fitted as scaled inverse chi-squares, say how much their noises differ:
when they share one noise (d0 large) each series' t leans on it and gains most of that; when they differ (d0
small) each keeps its own. The null is simulated with the prior estimated as here: its flat series drawn with
variances from the store's prior and judged in calls of as many series, each call estimating its own prior from
them (_null), so that the prior's bias (each variance taken at its series' best cut) and its uncertainty are in
the null too. It needs PRIOR_SERIES pieces in a call: a series judged alone keeps its own noise.

Wild nights: a t leaning on a noise borrowed from the store cannot widen for a series whose nights are wild, and
a few of them in a row at either end make a step as large as a real one (with heavy-tailed noise, Student's t of 3
degrees of freedom, flat stores alarmed in 53 of 1,000, development seeds). So the call's residuals say how heavy
its noise's tails are (tail_dof: the t whose series give the nearest kurtosis, of TAIL_DOFS, or normal), and the
null is drawn with that noise: 42 of 1,000, while stores of normal noise are judged exactly as before (their tails
read as normal: 37 of 40 such stores, the rest t10 or t6; every row of normal noise the same on the development
seeds). Judged alone (no prior) the studentized t widens by itself, and the tails change its p-value little. A
single wild night by ×2 at a series' end is still `suspected`: it looks like a fresh step, and is one until the
next runs say otherwise (4 of 300 stores with t3 noise, development seeds). Tried: a t fitted by maximum
likelihood to the residuals, each over its series' robust noise, which read 40 stores of normal noise as t5 or t10
(the pooled residuals mix scales), so they would have paid too; session 18's fit to each call's residuals took 13
heavy-tailed stores of 200 to 11. FDR was chosen
on the benchmark's development seeds (issue 28-29); how it fares: docs/bench-history.md, on seeds used for
nothing else.

With fewer than MIN_SIZE runs after it a step cannot be tested yet. When every run after the last change (or
the start) lies beyond SUSPECT_SIGMAS × the noise of the runs before it (or beyond a factor SUSPECT_RATIO and
RATIO_SIGMAS × that noise: 20 sigma of a noise from 20 runs passed 12 of 1,000 3x steps), all on one side, and by
at least `min_change`, it is reported as `suspected` from the first such run; once MIN_SIZE runs follow, the test above
confirms it (`regression` or `improvement`) or not. With fewer than 2 × MIN_SIZE runs before it, their noise (from
two to four differences) is not known well enough to count sigmas (three nights wobbling 12 % put 20 of them
beyond a 3.2x drop; three equal ones put them under a 12 % wobble): the runs after it must lie beyond a factor
SUSPECT_RATIO instead, and past every repeat of the runs before it. A run's own repeats are a noise estimate that
needs no other run (if a smaller one than the nights' noise: back to back, they share the day), so SHORT_RUNS (2)
repeated runs before a step suffice, where runs of one repeat each need MIN_SIZE (a nightly job's 3.3x drop on its
third night of a new series: issue 40). `untested` lists the pieces too short to test, and why.

The thresholds (FDR, SUSPECT_SIGMAS, SUSPECT_RATIO) were chosen on the benchmark's development seeds
(benchmarks/history.py --develop) and are judged on its final seeds, which never chose anything.
"""

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from . import io500
from .key import DIRECTION, HIGHER, KEY_COLUMNS
from .points import label

MIN_SIZE = 3  # runs on each side of a confirmed change: a step shows only when it lasts
FDR = 0.03  # Benjamini–Hochberg's false discovery rate across the series of one call
MIN_CHANGE = 0.05  # history_min_change's default: smaller steps of the median are not reported
SUSPECT_SIGMAS = 20.0  # how far outside the noise the runs after a fresh step must lie to be suspected
SUSPECT_RATIO = 2.0  # how far off (a factor) they must lie when too few runs before them tell the noise
RATIO_SIGMAS = 8.0  # a step by SUSPECT_RATIO or more is suspected when it also lies this far outside the noise
SHORT_RUNS = 2  # the fewest runs before a suspected step when they were repeated (each run's repeats its noise)
NOISE_FLOOR = 0.005  # the least noise assumed (0.5 %): a series repeated to the last digit is not cut at a wobble
# The metric each series is tested on, by workload and op (an IO500 phase: its figure, io500.metric).
LEAD = {"write": "mb_s_durable", "read": "mb_s", "metadata": "iops"}


@dataclass
class Change:
    index: int  # first run after the change
    p_value: float
    median_before: float
    median_after: float
    confirmed: bool = True  # False: suspected, too few runs after it to test


def lead_metric(workload: str, op: str) -> str:
    if workload == io500.WORKLOAD:
        return io500.metric(op)
    return LEAD["metadata"] if workload == "metadata" else LEAD.get(op, "mb_s")


def noise(values: np.ndarray) -> float:
    """The noise of a (log) series as a standard deviation, from the differences of neighbours (steps barely
    move it): MAD of the differences, scaled to σ of a normal distribution; never below NOISE_FLOOR."""
    d = np.diff(values)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826 / np.sqrt(2) if len(d) else 0.0
    return max(mad, NOISE_FLOOR)


def _max_t(
    logs: np.ndarray, min_size: int, floor: float = 0.0, locate: bool = False, prior: tuple = (0.0, 0.0)
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `logs` (runs along the last axis): the largest two-sample t over the cuts, and the cut (with
    `locate`, the most probable cut; otherwise the one with that t). The noise is pooled within the two segments,
    moderated by `prior` (d0, s0²: worth d0 runs' noise at variance s0², noise_prior)."""
    n = logs.shape[-1]
    cuts = np.arange(min_size, n - min_size + 1)
    total, squares = np.cumsum(logs, axis=-1), np.cumsum(logs**2, axis=-1)
    na, nb = cuts, n - cuts
    mean_a, mean_b = total[..., cuts - 1] / na, (total[..., -1:] - total[..., cuts - 1]) / nb
    ss_a = squares[..., cuts - 1] - na * mean_a**2
    ss_b = (squares[..., -1:] - squares[..., cuts - 1]) - nb * mean_b**2
    d0, s02 = prior
    pooled = np.maximum((d0 * s02 + ss_a + ss_b) / (d0 + n - 2), floor**2)
    t = np.abs(mean_a - mean_b) / np.sqrt(pooled * (1 / na + 1 / nb))
    best_t = np.max(t, axis=-1)
    if not locate:
        return cuts[np.argmax(t, axis=-1)], best_t
    # Where the step is: the cut of highest posterior (flat priors on the two levels and log σ), not the largest
    # t. Integrating the levels out weighs a cut by 1/sqrt(na·nb), which the largest t (the profile likelihood)
    # leaves out: it moves a step with few runs after it one run early too often (docs/bench-history.md). The
    # test's statistic stays the largest t, whose null is simulated below.
    log_post = -0.5 * np.log(na * nb) - (n - 2) / 2 * np.log(np.maximum(ss_a + ss_b, (n - 2) * floor**2))
    return cuts[np.argmax(log_post, axis=-1)], best_t


# Simulated flat series per length: p-values down to 1/100,001. Benjamini–Hochberg in a store of 50 series at FDR
# 3 % asks p ≤ 0.0006 of its first series, where 20,000 draws left ~12 above: that tail's sampling error made 13
# of 300 flat stores alarm (development seeds), 100,000 draws 9, the 3 % the FDR promises.
NULL_DRAWS = 100_000
PRIOR_SERIES = 10  # fewer pieces in one call say too little about how their noises spread to borrow from
TAIL_DOFS = (3.0, 4.0, 6.0, 10.0)  # the tails a call's noise may be fitted with (tail_dof), besides normal
PRIOR_DOF_MAX = 200  # a prior worth more runs is as good as a known noise (and its null is cached by d0)


def noise_prior(variances, dof) -> tuple[float, float]:
    """How the noise varies across the pieces of one call (Smyth 2004, limma's eBayes: the variances as scaled
    inverse chi-squares): (d0, s0²), d0 rounded to whole runs and at most PRIOR_DOF_MAX; (0, 0) borrows nothing.
    Pieces with one noise give a large d0, so each piece's t leans on the noise of all; pieces whose noises
    differ give a small d0 and keep their own."""
    v, d = np.maximum(np.asarray(variances, dtype=float), 1e-12), np.asarray(dof, dtype=float)
    if len(v) < PRIOR_SERIES:
        return 0.0, 0.0
    e = np.log(v) - special.digamma(d / 2) + np.log(d / 2)
    spread = np.var(e, ddof=1) - np.mean(special.polygamma(1, d / 2))
    d0 = PRIOR_DOF_MAX if spread <= 0 else min(2 * _trigamma_inverse(spread), PRIOR_DOF_MAX)
    d0 = float(round(d0))
    if d0 == 0:
        return 0.0, 0.0
    return d0, float(np.exp(np.mean(e) + special.digamma(d0 / 2) - np.log(d0 / 2)))


def tail_dof(pieces: list, min_size: int = MIN_SIZE) -> float:
    """How heavy the tails of the nights' noise are across the pieces of one call: the degrees of freedom (of
    TAIL_DOFS, 0 for normal) of the Student's t whose series, judged as these are, give the nearest kurtosis of
    their pooled residuals (each piece's residuals within the segments of its best cut, over their own standard
    deviation: a wild night inflates its own series' noise too, so the kurtosis is matched to simulated series,
    not fitted). Too few pieces (PRIOR_SERIES) say too little: 0."""
    if len(pieces) < PRIOR_SERIES:
        return 0.0
    observed = _kurtosis(pieces, min_size)
    n = int(np.median([len(lg) for lg in pieces]))
    return min((0.0, *TAIL_DOFS), key=lambda dof: abs(np.log(_tail_kurtosis(n, min_size, dof) / observed)))


def _kurtosis(pieces, min_size: int) -> float:
    """The kurtosis of the pieces' pooled residuals (tail_dof), pieces of one length taken together."""
    by_length: dict[int, list] = {}
    for lg in pieces:
        by_length.setdefault(len(lg), []).append(lg)
    pooled = []
    for same in by_length.values():
        r = _residuals(np.asarray(same, dtype=float), min_size)[0]
        pooled.append((r / np.maximum(np.sqrt(np.mean(r**2, axis=1, keepdims=True)), 1e-12)).ravel())
    z = np.concatenate(pooled)
    return float(np.mean(z**4))


@functools.cache
def _tail_kurtosis(n: int, min_size: int, dof: float) -> float:
    """_kurtosis of flat series of n runs with Student's t noise of `dof` (0: normal)."""
    rng = np.random.default_rng(20261207)
    draws = rng.standard_t(dof, (4000, n)) if dof else rng.standard_normal((4000, n))
    return _kurtosis(draws, min_size)


def _trigamma_inverse(y: float) -> float:
    x = 0.5 + 1 / y  # Smyth's Newton iteration, from below
    for _ in range(50):
        tri = special.polygamma(1, x)
        step = tri * (1 - tri / y) / special.polygamma(2, x)
        x += step
        if -step / x < 1e-8:
            break
    return float(x)


@functools.cache
def _null(n: int, min_size: int, d0: float = 0.0, pieces: int = 0, dof: float = 0.0) -> np.ndarray:
    """The largest t over all cuts of flat series of n runs (normal noise, or Student's t of `dof`), sorted: the
    null distribution of the statistic best_cut picks, so that the choice of the cut is accounted for (the
    statistic does not depend on the noise's level). With a prior worth d0 runs, each series' variance is drawn
    from it, and the draws are judged in calls of `pieces` series, each call's prior estimated from its own series
    exactly as judge estimates it from a store (noise_prior of each series' variance at its best cut, biased low
    under the null, and as uncertain as `pieces` series make it): a prior taken as known would make the real
    statistic look larger than its null. `dof` as tail_dof reads it from the store. A fixed seed: the same store
    gives the same answer every time."""
    rng = np.random.default_rng(20261205)
    calls = max(NULL_DRAWS // max(pieces, PRIOR_SERIES), 1)
    per_call = NULL_DRAWS // calls
    shape = (calls * per_call, n)
    draws = rng.standard_t(dof, shape) if dof else rng.standard_normal(shape)
    if not d0:
        return np.sort(_max_t(draws, min_size)[1])
    draws *= np.sqrt(d0 / rng.chisquare(d0, len(draws)))[:, None]
    variances = _residual_variances(draws, min_size).reshape(calls, per_call)
    found = []
    for call, v in zip(draws.reshape(calls, per_call, n), variances, strict=True):
        found.append(_max_t(call, min_size, prior=noise_prior(v, np.full(per_call, n - 2)))[1])
    return np.sort(np.concatenate(found))


def _residuals(logs: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's residuals from the mean of its segment, the two segments of its best cut; and which runs lie
    before the cut."""
    before = np.arange(logs.shape[-1]) < _max_t(logs, min_size)[0][:, None]
    r = np.zeros_like(logs)
    for part in (before, ~before):
        mean = np.where(part, logs, 0).sum(axis=1) / part.sum(axis=1)
        r = np.where(part, logs - mean[:, None], r)
    return r, before


def _residual_variances(logs: np.ndarray, min_size: int) -> np.ndarray:
    """Each row's noise as a variance, within the two segments of its best cut (a step does not inflate it)."""
    r, before = _residuals(logs, min_size)
    ss = 0.0
    for part in (before, ~before):
        ss = ss + np.where(part, r**2, 0).sum(axis=1)
    return ss / (logs.shape[-1] - 2)


def best_cut(
    logs: np.ndarray, min_size: int = MIN_SIZE, prior: tuple = (0.0, 0.0), pieces: int = 0, dof: float = 0.0
) -> tuple[int, float]:
    """The cut with the largest t statistic (noise moderated by `prior`, estimated from `pieces` pieces), and its
    p-value against the largest t of simulated flat series of as many runs: the choice of the cut is accounted
    for. (0, 1.0) when the piece is too short to cut."""
    logs = np.asarray(logs, dtype=float)
    n = len(logs)
    if n < 2 * min_size:
        return 0, 1.0
    cut, t = _max_t(logs[None, :], min_size, NOISE_FLOOR, locate=True, prior=prior)
    null = _null(n, min_size, prior[0], pieces if prior[0] else 0, dof)
    above = len(null) - np.searchsorted(null, t[0], side="left")
    return int(cut[0]), float((above + 1) / (len(null) + 1))


def _magnitude(before: float, after: float) -> float:
    return abs(after / before - 1) if before else float("inf")


def _segment(values, logs, lo, hi, cutoff, min_change, min_size, prior, pieces, dof, first=None) -> list[Change]:
    cut, p = first if first is not None else best_cut(logs[lo:hi], min_size, prior, pieces, dof)
    if p > cutoff:
        return []
    cut += lo
    before, after = float(np.median(values[lo:cut])), float(np.median(values[cut:hi]))
    if _magnitude(before, after) < min_change:
        return []
    left = _segment(values, logs, lo, cut, cutoff, min_change, min_size, prior, pieces, dof)
    right = _segment(values, logs, cut, hi, cutoff, min_change, min_size, prior, pieces, dof)
    return [*left, Change(cut, p, before, after), *right]


def suspected(values, logs, start: int, min_change: float, min_size: int = MIN_SIZE, reps=None) -> Change | None:
    """A fresh step at the end of a piece whose runs from `start` on (the last change, or the piece's start) are
    too few to test it: the first run k (fewer than min_size from the end) from which every run lies beyond
    SUSPECT_SIGMAS × the noise of the runs start..k (or beyond a factor SUSPECT_RATIO and RATIO_SIGMAS × that
    noise), on one side, by at least min_change. With fewer than
    2 × min_size runs start..k their noise is not known (from two differences it is often 3 times too small or
    too large): beyond a factor SUSPECT_RATIO instead, and beyond every repeat of those runs (`reps`: each
    run's lowest and highest repeat and their number): a run's own repeats are its noise, so that SHORT_RUNS runs
    repeated are enough to stand on, where runs of one repeat each need min_size."""
    n = len(values)
    for k in range(max(start + SHORT_RUNS, n - min_size + 1), n):
        ref, tail = logs[start:k], logs[k:]
        repeated = reps is not None and (reps[start:k, 2] >= 2).all()
        if len(ref) < min_size and not repeated:
            continue
        level = float(np.median(ref))
        if len(ref) >= 2 * min_size:
            # 20 sigma of a noise from a few runs may pass even a 3x step (ln 3 = 1.10): of series of 20 runs at 3 %
            # noise, 1.1 % estimate it over 1.83 x too high. A step by SUSPECT_RATIO that lies RATIO_SIGMAS out is
            # suspected too (none of 20,000 such estimates put ln 2 within 8 of them).
            sigma = noise(ref)
            limit = min(SUSPECT_SIGMAS * sigma, max(np.log(SUSPECT_RATIO), RATIO_SIGMAS * sigma))
        else:
            limit = np.log(SUSPECT_RATIO)
        if (np.abs(ref - level) >= limit).any():  # the step began earlier: not a fresh one
            continue
        off = tail - level
        if not ((off > 0).all() or (off < 0).all()):
            continue
        if np.min(np.abs(off)) < limit:
            continue
        if len(ref) < 2 * min_size and reps is not None:  # and past every repeat before it
            low, high = _logs(reps[start:k, 0]).min(), _logs(reps[start:k, 1]).max()
            if not ((tail > high).all() or (tail < low).all()):
                continue
        before, after = float(np.median(values[start:k])), float(np.median(values[k:]))
        if _magnitude(before, after) >= min_change:
            return Change(k, float("nan"), before, after, confirmed=False)
    return None


def _logs(values: np.ndarray) -> np.ndarray:
    # Rates and latencies change by factors: judged on their logarithm, a run at half the rate is as far off as one
    # at twice, and a noisy fast segment does not drown a slow steady one.
    return np.log(values) if (values > 0).all() else values


def bh_cutoff(pvalues, fdr: float = FDR) -> float:
    """The largest p-value Benjamini–Hochberg rejects at `fdr` among `pvalues` (-1 when none)."""
    p = np.sort(np.asarray(pvalues, dtype=float))
    ok = np.nonzero(p <= fdr * np.arange(1, len(p) + 1) / max(len(p), 1))[0]
    return float(p[ok[-1]]) if len(ok) else -1.0


def judge(
    pieces: list, min_change: float = MIN_CHANGE, fdr: float = FDR, min_size: int = MIN_SIZE, reps: list | None = None
) -> list:
    """The changes of each piece (a series' run values in time order), Benjamini–Hochberg across all of them.
    `reps`: per piece, each run's (lowest repeat, highest repeat, repeats), or None where unknown.

    A suspected step at the end of a piece is looked for first, and the runs from it on are left out of the test:
    one wild last run would otherwise make the best cut of the runs before it."""
    pieces = [np.asarray(v, dtype=float) for v in pieces]
    logs = [_logs(v) for v in pieces]
    reps = [None if r is None else np.asarray(r, dtype=float) for r in reps or [None] * len(pieces)]
    tails = [suspected(v, lg, 0, min_change, min_size, r) for v, lg, r in zip(pieces, logs, reps, strict=True)]
    ends = [t.index if t else len(v) for t, v in zip(tails, pieces, strict=True)]
    testable = [lg[:end] for lg, end in zip(logs, ends, strict=True) if end >= 2 * min_size]
    variances = [float(_residual_variances(lg[None, :], min_size)[0]) for lg in testable]
    prior = noise_prior(variances, [len(lg) - 2 for lg in testable])
    dof = tail_dof(testable, min_size)
    firsts = [best_cut(lg[:end], min_size, prior, len(testable), dof) for lg, end in zip(logs, ends, strict=True)]
    cutoff = bh_cutoff([p for _, p in firsts], fdr)
    found = []
    for values, lg, first, tail, end, r in zip(pieces, logs, firsts, tails, ends, reps, strict=True):
        changes = _segment(
            values[:end], lg[:end], 0, end, cutoff, min_change, min_size, prior, len(testable), dof, first
        )
        if tail is None and changes:  # a fresh step after the last confirmed one
            tail = suspected(values, lg, changes[-1].index, min_change, min_size, r)
        found.append([*changes, tail] if tail is not None else changes)
    return found


def find(values, min_change: float = MIN_CHANGE, fdr: float = FDR, min_size: int = MIN_SIZE) -> list[Change]:
    """The change points of one series judged alone."""
    return judge([values], min_change, fdr, min_size)[0]


COLUMNS = [
    "metric",
    "before_run",
    "after_run",
    "median_before",
    "median_after",
    "ratio",
    "p_value",
    "verdict",
    "context_changed",
    "others",
]


def context_changed(before: dict, after: dict) -> str:
    """The context fields that differ from the last run before a change to the first after it (campaign and
    date always do and are not named)."""
    names = [k for k in sorted(set(before) | set(after)) if k not in ("campaign", "date")]
    return "; ".join(
        f"{k} {before.get(k, '') or '–'} → {after.get(k, '') or '–'}"
        for k in names
        if before.get(k, "") != after.get(k, "")
    )


def baselines(line: pd.DataFrame, marks: dict[str, str]) -> list[int]:
    """Where the pieces of one series start: its first run, and each marked run (by its name, or a campaign's
    first run by the campaign's name)."""
    first = ~line["campaign"].duplicated()
    marked = line["run"].isin(list(marks)) | (line["campaign"].isin(list(marks)) & first)
    return [0] + [i for i in range(1, len(line)) if marked.iloc[i]] + [len(line)]


def _verdict(metric: str, ratio: float, confirmed: bool) -> str:
    if not confirmed:
        return "suspected"
    better = ratio > 1 if DIRECTION[metric] == HIGHER else ratio < 1
    return "improvement" if better else "regression"


def _others(series_points: pd.DataFrame, metric: str, piece_runs: list, cut: int, hi: int) -> str:
    """The other metrics' ratio of medians over the same runs, e.g. 'mb_s ×0.31; lat_p50_us ×3.2'."""
    found = []
    for other, line in series_points[series_points["metric"] != metric].groupby("metric"):
        by_run = line.set_index("run")["median"]
        before = [by_run[r] for r in piece_runs[:cut] if r in by_run.index]
        after = [by_run[r] for r in piece_runs[cut:hi] if r in by_run.index]
        if before and after and np.median(before):
            found.append(f"{other} ×{np.median(after) / np.median(before):.3g}")
    return "; ".join(found)


def analyse(points: pd.DataFrame, marks: dict[str, str], min_change: float = MIN_CHANGE) -> pd.DataFrame:
    """changes.csv: every change point of every series (fsbench.history.points.points) on its lead metric, by
    `series` (its id). A marked run starts a new baseline: the series is judged in pieces that start at marked
    runs."""
    pieces = []  # (series, metric, that metric's line, the series' points, lo, hi)
    for series, all_metrics in points.groupby("series", sort=False) if len(points) else []:
        first = all_metrics.iloc[0]
        metric = lead_metric(first["workload"], first["op"])
        line = all_metrics[all_metrics["metric"] == metric].sort_values("started").reset_index(drop=True)
        starts = baselines(line, marks)
        pieces += [(series, metric, line, all_metrics, lo, hi) for lo, hi in zip(starts, starts[1:], strict=False)]
    values = [p[2]["median"].to_numpy()[p[4] : p[5]] for p in pieces]
    judged = judge(values, min_change, reps=[p[2][["low", "high", "n"]].to_numpy()[p[4] : p[5]] for p in pieces])
    found = []
    for (series, metric, line, all_metrics, lo, hi), changes in zip(pieces, judged, strict=True):
        piece = line.iloc[lo:hi].reset_index(drop=True)
        for c in changes:
            before, after = piece.iloc[c.index - 1], piece.iloc[c.index]
            ratio = c.median_after / c.median_before if c.median_before else float("nan")
            found.append(
                {"series": series}
                | {col: after[col] for col in KEY_COLUMNS}
                | {
                    "metric": metric,
                    "before_run": before["run"],
                    "after_run": after["run"],
                    "median_before": c.median_before,
                    "median_after": c.median_after,
                    "ratio": ratio,
                    "p_value": c.p_value,
                    "verdict": _verdict(metric, ratio, c.confirmed),
                    "context_changed": context_changed(before["context"], after["context"]),
                    "others": _others(all_metrics, metric, list(piece["run"]), c.index, len(piece)),
                }
            )
    return pd.DataFrame(found, columns=["series", *KEY_COLUMNS, *COLUMNS])


def untested(points: pd.DataFrame, marks: dict[str, str], min_size: int = MIN_SIZE) -> pd.DataFrame:
    """What the test does not judge, and why (the columns of points.left_out: series, cell, runs, why): every piece
    of a series (its runs since its start or a mark) with fewer than 2 × min_size runs, where only a fresh step by
    a factor SUSPECT_RATIO past every repeat before it can be told (`suspected`), or nothing at all."""
    found = []
    for series, all_metrics in points.groupby("series", sort=False) if len(points) else []:
        first = all_metrics.iloc[0]
        line = all_metrics[all_metrics["metric"] == lead_metric(first["workload"], first["op"])]
        line = line.sort_values("started").reset_index(drop=True)
        if len(line) < 2:  # points.left_out lists it (one valid run only)
            continue
        starts = baselines(line, marks)
        for lo, hi in zip(starts, starts[1:], strict=False):
            runs = hi - lo
            if runs >= 2 * min_size:
                continue
            since = f" since the mark at {line['run'].iloc[lo]}" if lo else ""
            repeated = (line["n"].iloc[lo:hi] >= 2).all()
            least = SHORT_RUNS if repeated else min_size
            if runs > least:
                why = (
                    f"{runs} runs{since}: a step is tested from {2 * min_size} on; until then only one by ×"
                    f"{SUSPECT_RATIO:g} or more past every repeat of the runs before it is suspected"
                )
            else:
                each = "repeated" if repeated else "of one repeat each"
                why = (
                    f"{runs} runs{since}: too few to judge (a step by ×{SUSPECT_RATIO:g} is suspected after {least} "
                    f"runs {each}, tested from {2 * min_size})"
                )
            found.append({"series": series, "cell": label(line.iloc[-1]), "runs": runs, "why": why})
    return pd.DataFrame(found, columns=["series", "cell", "runs", "why"])


def untested_summary(table: pd.DataFrame) -> list[str]:
    """untested in a few lines: '2 series: 2 runs: too few to judge (…)'."""
    return [f"{g['series'].nunique()} series: {why}" for why, g in table.groupby("why", sort=False)]
