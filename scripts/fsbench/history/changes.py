"""Change points in a series of runs: where a figure stepped, and whether that step is real.

The method is Hunter's (Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
Regressions", ICPE 2023, as Apache Otava does it): a split step proposes candidate ("weak") change points, a
merge step drops the weakest candidate (largest p-value of a two-sided Student's t-test between the segments on
either side, or the smallest step) until every one left is significant and large enough. The split step here is
PELT (Killick et al. 2012) from ruptures, on the series scaled by a robust estimate of its noise, where Otava uses
E-Divisive means: Otava and MongoDB's signal-processing-algorithms pin numpy and scipy to versions older than the
project's, ruptures installs beside them; and with the merge step doing the deciding, the split step only has to
propose.

Judged on the logarithm of one value per run (the run's median): rates change by factors; reps of one run
share that day's machine, so they say less about a change between runs than their number suggests. A single
outlying run cannot make a change point: segments have at least MIN_SIZE runs, and the step is measured between
the segments' medians.
"""

from dataclasses import dataclass

import numpy as np
import pandas as pd
import ruptures
from scipy import stats

from .key import DIRECTION, HIGHER, KEY_COLUMNS

MIN_SIZE = 3  # runs on each side of a change: a step shows only when it lasts
MAX_PVALUE = 0.01  # Otava defaults to 0.001 over long series; ours are short: 3 runs after a step must do
MIN_MAGNITUDE = 0.05  # smaller steps than 5 % of the median are not reported
PENALTY = 1.5  # PELT's penalty per change point, in units of log(n) of the noise-scaled series


@dataclass
class Change:
    index: int  # first run after the change
    p_value: float
    median_before: float
    median_after: float


def noise(values: np.ndarray) -> float:
    """The noise of a (log) series as a standard deviation, from the differences of neighbours (steps barely
    move it): MAD of the differences, scaled to σ of a normal distribution; never below 0.005 (0.5 %), so that
    a series repeated to the last digit is not cut at every wobble."""
    d = np.diff(values)
    mad = float(np.median(np.abs(d - np.median(d)))) * 1.4826 / np.sqrt(2) if len(d) else 0.0
    return max(mad, 0.005)


def candidates(values: np.ndarray, min_size: int = MIN_SIZE) -> list[int]:
    """Split step: PELT on the noise-scaled (log) series; the indexes where a new segment starts."""
    n = len(values)
    if n < 2 * min_size:
        return []
    scaled = (values - np.median(values)) / noise(values)
    algo = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(scaled.reshape(-1, 1))
    return [b for b in algo.predict(pen=PENALTY * np.log(n)) if b < n]


def _test(before: np.ndarray, after: np.ndarray) -> float:
    if len(before) < 2 or len(after) < 2:
        return 1.0
    if np.ptp(np.concatenate([before, after])) == 0:
        return 1.0
    p = stats.ttest_ind(before, after, equal_var=True).pvalue
    return 1.0 if np.isnan(p) else float(p)


def _judge(values: np.ndarray, scale: np.ndarray, cuts: list[int]) -> list[Change]:
    edges = [0, *cuts, len(values)]
    found = []
    for i, cut in enumerate(cuts):
        lo, hi = edges[i], edges[i + 2]
        p = _test(scale[lo:cut], scale[cut:hi])
        found.append(Change(cut, p, float(np.median(values[lo:cut])), float(np.median(values[cut:hi]))))
    return found


def _magnitude(c: Change) -> float:
    return abs(c.median_after / c.median_before - 1) if c.median_before else float("inf")


def find(
    values, max_pvalue: float = MAX_PVALUE, min_magnitude: float = MIN_MAGNITUDE, min_size: int = MIN_SIZE
) -> list[Change]:
    """The change points of one series of run values (in time order), each judged against its neighbours."""
    values = np.asarray(values, dtype=float)
    # Rates and latencies change by factors: judged on their logarithm, a run at half the rate is as far off as
    # one at twice, and a noisy fast segment does not drown a slow steady one.
    scale = np.log(values) if (values > 0).all() else values
    cuts = candidates(scale, min_size)
    while cuts:  # merge step: drop the weakest until all that remain are significant and large enough
        judged = _judge(values, scale, cuts)
        weakest = max(judged, key=lambda c: c.p_value)
        if weakest.p_value < max_pvalue:
            weakest = min(judged, key=_magnitude)
            if _magnitude(weakest) >= min_magnitude:
                return judged
        cuts.remove(weakest.index)
    return []


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


def _run(line) -> str:
    return line["run"]


def baselines(line: pd.DataFrame, marks: dict[str, str]) -> list[int]:
    """Where the pieces of one series start: its first run, and each marked run (by its name, or a campaign's
    first run by the campaign's name)."""
    first = ~line["campaign"].duplicated()
    marked = line["run"].isin(list(marks)) | (line["campaign"].isin(list(marks)) & first)
    return [0] + [i for i in range(1, len(line)) if marked.iloc[i]] + [len(line)]


def analyse(points: pd.DataFrame, marks: dict[str, str]) -> pd.DataFrame:
    """changes.csv: every change point of every series (fsbench.history.points.points), by `series` (its id). A marked
    run starts a new baseline: the series is judged in pieces that start at marked runs."""
    found = []
    for (series, metric), line in points.groupby(["series", "metric"], sort=False) if len(points) else []:
        line = line.sort_values("started").reset_index(drop=True)
        starts = baselines(line, marks)
        for lo, hi in zip(starts, starts[1:], strict=False):
            piece = line.iloc[lo:hi].reset_index(drop=True)
            for c in find(piece["median"].to_numpy()):
                before, after = piece.iloc[c.index - 1], piece.iloc[c.index]
                ratio = c.median_after / c.median_before if c.median_before else float("nan")
                better = ratio > 1 if DIRECTION[metric] == HIGHER else ratio < 1
                found.append(
                    {"series": series}
                    | {col: after[col] for col in KEY_COLUMNS}
                    | {
                        "metric": metric,
                        "before_run": _run(before),
                        "after_run": _run(after),
                        "median_before": c.median_before,
                        "median_after": c.median_after,
                        "ratio": ratio,
                        "p_value": c.p_value,
                        "verdict": "improvement" if better else "regression",
                        "context_changed": context_changed(before["context"], after["context"]),
                    }
                )
    return pd.DataFrame(found, columns=["series", *KEY_COLUMNS, *COLUMNS])
