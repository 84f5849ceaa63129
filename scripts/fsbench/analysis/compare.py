"""Comparisons with verdicts: one figure's repeats against another's, as ratio, 95 % interval, p-value and verdict.

Within a campaign (comparisons.csv, per cell and metric): each filesystem against raw, each filesystem against each
later one in the campaign's order, and each block size against the next larger one per target. Between two runs
(`python -m fsbench compare OLD NEW`): each cell they share, NEW against OLD, beside what differs in their
provenance.json.

The metric: a write's durable rate (mb_s_durable, what the storage sustained), a read's mb_s, and iops where the
column holds values, only for cells of a pattern other than seq, within a campaign and between two runs (between
block sizes and for sequential cells iops only restates the rate).
ratio = a's median / b's median. The interval and the p-value come from one test, Welch's t-test on log(rate):
d = mean(log a) - mean(log b), se = sqrt(var(log a)/n_a + var(log b)/n_b), Welch-Satterthwaite degrees of freedom;
the interval exp(d ± t(0.975, df) se) is that of the ratio of geometric means (for lognormal rates the ratio of
medians), positive by construction. verdict: `faster` or `slower` (a relative to b) where the interval excludes 1
and p < 0.05, else `no clear difference`; a side with fewer than two repeats gets no test and says so in `note`.
Only figures that are valid answer (fsbench.analysis.validity): valid_a and valid_b say whether every repeat of
that side is; where one is not, the verdict is `not comparable` and `note` says which side and why (the ratio,
interval and p are still given, for what they are worth).
"""

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from fsbench.analysis.names import UNDECIDED
from fsbench.analysis.stats import (
    KEYS,
    NOT_POSITIVE,
    TEST,
    TOO_FEW,
    cell_flags,
    is_metadata,
    methods_of,
    sort_rows,
)
from fsbench.analysis.validity import NOT_COMPARABLE, side
from fsbench.toolkit.sizes import format_size

# comparisons.csv, in order. vs: what differs between a and b (target, block_size or run); that column is empty.
COLUMNS = [
    "campaign",
    "host",
    "array",
    "op",
    "metric",
    "vs",
    "target",
    "fs_type",
    *TEST,
    "a",
    "b",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "verdict",
    "note",
    "valid_a",
    "valid_b",
]
# Below this p (and with the interval excluding 1) a difference is called.
ALPHA = 0.05
# The figure each op is judged by; iops besides, where measured.
METRIC = {"write": "mb_s_durable", "read": "mb_s"}
# What makes a cell the same in two runs (docs/contract.md): host too, where either run has several.
RUN_CELL = ["array", "target", "fs_type", "op", *TEST]


def _clean(values) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return x[~np.isnan(x)]


def welch_log(a, b, level: float = 0.95) -> dict:
    """Welch's t-test on log(a) vs log(b): the interval of a/b (ci_low, ci_high), p_value, and why there is
    none (note). Constant samples have no spread: equal ones give p = 1 and the interval [1, 1], different ones
    p = 0 and a zero-width interval at their ratio."""
    a, b = _clean(a), _clean(b)
    if min(len(a), len(b)) < 2:
        return {"ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "note": f"{TOO_FEW} (n={len(a)} vs {len(b)})"}
    if not ((a > 0).all() and (b > 0).all()):
        return {"ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan, "note": NOT_POSITIVE}
    la, lb = np.log(a), np.log(b)
    # A constant sample's mean is exactly its value, its variance exactly zero (no rounding noise).
    ma, va = (la[0], 0.0) if np.ptp(a) == 0 else (la.mean(), la.var(ddof=1) / len(a))
    mb, vb = (lb[0], 0.0) if np.ptp(b) == 0 else (lb.mean(), lb.var(ddof=1) / len(b))
    d, se = ma - mb, np.sqrt(va + vb)
    if se == 0:
        p = 1.0 if d == 0 else 0.0
        return {"ci_low": float(np.exp(d)), "ci_high": float(np.exp(d)), "p_value": p, "note": ""}
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = student_t.ppf(0.5 + level / 2, df) * se
    p = 2 * student_t.sf(abs(d) / se, df)
    return {"ci_low": float(np.exp(d - half)), "ci_high": float(np.exp(d + half)), "p_value": float(p), "note": ""}


def verdict(ci_low, ci_high, p_value) -> str:
    """faster / slower where the interval excludes 1 and p < ALPHA, else no clear difference."""
    if pd.isna(p_value) or not p_value < ALPHA:
        return UNDECIDED
    return "faster" if ci_low > 1 else "slower" if ci_high < 1 else UNDECIDED


def compare(a: pd.DataFrame, b: pd.DataFrame, metric: str, name_a: str, name_b: str) -> dict:
    """One comparison row (without the cell's columns): a's repeats (rows of measurements.csv) against b's."""
    xa, xb = _clean(a[metric]), _clean(b[metric])
    test = welch_log(xa, xb)
    med_a, med_b = (float(np.median(x)) if len(x) else np.nan for x in (xa, xb))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = med_a / med_b if med_b > 0 else np.nan
    (valid_a, why_a), (valid_b, why_b) = side(a), side(b)
    invalid = [
        f"{name} not valid ({why})" for name, ok, why in ((name_a, valid_a, why_a), (name_b, valid_b, why_b)) if not ok
    ]
    # Figures of two methods of fsbench (a finished cell kept by methods: recorded beside a new one) are not weighed.
    methods = [methods_of(rows["method"]) if "method" in rows else "" for rows in (a, b)]
    if all(methods) and (methods[0] != methods[1] or ";" in methods[0]):
        invalid.append(f"measured with different methods of fsbench ({name_a}: {methods[0]}, {name_b}: {methods[1]})")
    said = verdict(test["ci_low"], test["ci_high"], test["p_value"])
    notes = [f"{NOT_COMPARABLE}: {' and '.join(invalid)}"] if invalid else []
    notes += [test["note"]] if test["note"] else []
    for name, rows in ((name_a, a), (name_b, b)):
        flags = cell_flags(rows["flags"]) if "flags" in rows else ""
        if flags:
            notes.append(f"{name} flagged {flags}")
    return {
        "a": name_a,
        "b": name_b,
        "n_a": len(xa),
        "n_b": len(xb),
        "median_a": med_a,
        "median_b": med_b,
        "ratio": ratio,
        "ci_low": test["ci_low"],
        "ci_high": test["ci_high"],
        "p_value": test["p_value"],
        "verdict": NOT_COMPARABLE if invalid else said,
        "note": "; ".join(notes),
        "valid_a": valid_a,
        "valid_b": valid_b,
    }


def metrics(op, a: pd.DataFrame, b: pd.DataFrame, iops: bool = True) -> list[str]:
    """The metrics two sides of a comparison are judged by: the op's rate, and iops where both measured it."""
    out = [METRIC[op]] if op in METRIC and METRIC[op] in a and METRIC[op] in b else []
    if iops and "iops" in a and "iops" in b and a["iops"].notna().any() and b["iops"].notna().any():
        out.append("iops")
    return out


def could_decide(a, b, n_a: int, n_b: int) -> bool:
    """Would the test above call a difference between a and b with n_a and n_b repeats, were their geometric means
    and spreads what they are now? Too few repeats to tell: yes, where n_a and n_b give the test at all."""
    a, b = _clean(a), _clean(b)
    if min(len(a), len(b)) < 2:
        return min(n_a, n_b) >= 2
    if not ((a > 0).all() and (b > 0).all()):
        return False
    la, lb = np.log(a), np.log(b)
    va = 0.0 if np.ptp(a) == 0 else la.var(ddof=1) / n_a
    vb = 0.0 if np.ptp(b) == 0 else lb.var(ddof=1) / n_b
    d, se = la.mean() - lb.mean(), np.sqrt(va + vb)
    if se == 0:
        return bool(d != 0)
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1))
    return bool(abs(d) > student_t.ppf(1 - ALPHA / 2, df) * se)


def questions(own: pd.DataFrame, others: pd.DataFrame, max_reps: int) -> list[dict]:
    """The comparisons a cell is part of (as comparisons() makes them, the cell as a), each with `open`: undecided,
    and decidable within max_reps repeats if the figures stay as they are. `own`: the cell's rows (write and read
    of each repeat so far); `others`: the rows of the cells it is compared with, each as far as it got: a cell
    that has fewer repeats than this one stopped, and keeps what it has."""
    if own.empty or others.empty:
        return []
    cell = own.iloc[0]
    k = own["rep"].nunique()
    out = []
    for (target, size), theirs in others.groupby(["target", "block_size"], sort=False):
        by_size = target == cell["target"]
        names = [format_size(int(cell["block_size"])), format_size(int(size))] if by_size else [cell["target"], target]
        n_theirs = max_reps if theirs["rep"].nunique() >= k else theirs["rep"].nunique()
        for op in ("write", "read"):
            a, b = own[own["op"] == op], theirs[theirs["op"] == op]
            for metric in metrics(op, a, b, iops=not by_size and cell["pattern"] != "seq"):
                row = compare(a, b, metric, *map(str, names)) | {"op": op, "metric": metric}
                undecided = row["verdict"] == UNDECIDED
                out.append(row | {"open": undecided and could_decide(a[metric], b[metric], max_reps, n_theirs)})
    return out


def with_tests(measurements: pd.DataFrame) -> pd.DataFrame:
    """`measurements` with every test column (empty where a file has none: measured before it was one)."""
    return measurements.assign(**{c: np.nan for c in ("iodepth", "shared_file") if c not in measurements})


def _cells(measurements: pd.DataFrame) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """The cells of `measurements` (by KEYS) in a reader's order (raw first, then the campaign's order, sizes
    ascending), and their rows: column `_i` of a cell indexes the list of rows."""
    parts = list(measurements.groupby(KEYS, sort=False, dropna=False))
    cells = pd.DataFrame([key for key, _ in parts], columns=KEYS).assign(_i=range(len(parts)))
    return sort_rows(cells, ["campaign", "host", "array", "target", "op", *TEST]), [rows for _, rows in parts]


def comparisons(measurements: pd.DataFrame) -> pd.DataFrame:
    """comparisons.csv from measurements.csv: per cell and metric, each filesystem against raw, each filesystem
    against each later one, each block size against the next larger one per target."""
    measurements = measurements[~is_metadata(measurements)]  # block I/O only: the metadata test is not compared
    if measurements.empty:
        return pd.DataFrame(columns=COLUMNS)
    cells, rows = _cells(with_tests(measurements))
    out = []
    place = ["campaign", "host", "array"]
    # Targets, within a cell (campaign, host, array, op, test): each filesystem against raw, then against each
    # later filesystem.
    for _, same in cells.groupby([*place, "op", *TEST], sort=False, dropna=False):
        raw = [r for _, r in same.iterrows() if r["target"] == "raw"]
        fs = [r for _, r in same.iterrows() if r["target"] != "raw"]
        pairs = [(a, b) for b in raw for a in fs] + [(a, b) for i, a in enumerate(fs) for b in fs[i + 1 :]]
        for a, b in pairs:
            # IOPS is what random I/O is judged by; for sequential cells it only restates the rate.
            iops = a["pattern"] != "seq"
            for metric in metrics(a["op"], rows[a["_i"]], rows[b["_i"]], iops=iops):
                row = {c: a[c] for c in [*place, "op", *TEST]} | {"metric": metric, "vs": "target"}
                out.append(row | compare(rows[a["_i"]], rows[b["_i"]], metric, str(a["target"]), str(b["target"])))
    # Block sizes, within a target and test: each against the next larger, by rate only (iops = rate / block size:
    # smaller blocks always do more operations, which answers nothing).
    for _, same in cells.groupby([c for c in KEYS if c != "block_size"], sort=False, dropna=False):
        sizes = [r for _, r in same.sort_values("block_size", kind="stable").iterrows()]
        for a, b in zip(sizes, sizes[1:], strict=False):
            for metric in metrics(a["op"], rows[a["_i"]], rows[b["_i"]], iops=False):
                row = {c: a[c] for c in KEYS if c != "block_size"} | {"metric": metric, "vs": "block_size"}
                names = [format_size(int(r["block_size"])) for r in (a, b)]
                out.append(row | compare(rows[a["_i"]], rows[b["_i"]], metric, *names))
    return order(pd.DataFrame(out, columns=COLUMNS))


def order(frame: pd.DataFrame) -> pd.DataFrame:
    """Comparisons that found a difference first, then those that found none, then those resting on a figure that
    is not valid; each group in its own order."""
    rank = frame["verdict"].map({UNDECIDED: 1, NOT_COMPARABLE: 2}).fillna(0)
    return frame.iloc[rank.argsort(kind="stable")].reset_index(drop=True)
