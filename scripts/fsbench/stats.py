"""Statistics over measurements.csv: per-cell summaries, efficiency vs raw, the above-raw flag, summary.md.

Throughput statistics are on mb_s (what dd prints); the durable columns come from mb_s_durable.
Everything here is pure: frames in, new frames or text out.
"""

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from .sizes import format_size

# What makes two measurements the same test (besides op).
TEST = ["pattern", "block_size", "direct", "streams"]
KEYS = ["campaign", "host", "array", "target", "fs_type", "op", *TEST]
# Raw and filesystem rows are compared within this cell (raw has its own target and fs_type).
CELL = ["campaign", "host", "array", "op", *TEST]
STATS = ["n", "median", "mean", "stdev", "ci95_low", "ci95_high", "cv", "efficiency_vs_raw"]
SUMMARY_COLUMNS = [*KEYS, *STATS, "median_durable", "mean_durable"]

LEGEND = (
    "MB/s = 10^6 bytes/s, as dd prints it. Each cell: median of n repetitions, "
    "[95% confidence interval of the mean, Student t]. "
    "Durable = including the flush to stable storage (the seed's `sync; time dd … && sync`, its `real` line)."
)


def _truthy(value) -> bool:
    # `direct` is a bool in memory but may come back from a CSV or a dd log as text.
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def _rank(values: pd.Series, first=()) -> np.ndarray:
    """Order of first appearance, with the values in `first` ahead of all others (in that order)."""
    codes, _ = pd.factorize(values, use_na_sentinel=False)
    rank = codes.astype(float)
    for i, value in enumerate(first):
        rank[(values == value).to_numpy()] = i - len(first)
    return rank


def _sort_key(values: pd.Series, column: str) -> np.ndarray:
    if column == "target":
        return _rank(values, first=["raw"])
    if column == "op":
        return _rank(values, first=["write", "read"])
    if column == "direct":
        return values.map(_truthy).to_numpy(dtype=float)  # buffered before direct
    if column in ("block_size", "streams"):
        return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    return _rank(values)


def sort_rows(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """`frame` in the order a reader expects: config order for names, write before read, sizes ascending."""
    if frame.empty:
        return frame
    order = np.lexsort([_sort_key(frame[c], c) for c in reversed(by)])
    return frame.iloc[order].reset_index(drop=True)


def varying(frame: pd.DataFrame) -> list[str]:
    """The test parameters besides block size that take more than one value in `frame`."""
    return [c for c in ("pattern", "direct", "streams") if c in frame and frame[c].nunique(dropna=False) > 1]


def test_label(row, vary=()) -> str:
    """'1MiB', plus pattern/direct/streams where they vary: '4MiB rand direct 8 streams'."""
    parts = [format_size(int(row["block_size"])) if pd.notna(row["block_size"]) else "?"]
    if "pattern" in vary:
        parts.append(str(row["pattern"]))
    if "direct" in vary:
        parts.append("direct" if _truthy(row["direct"]) else "buffered")
    if "streams" in vary:
        parts.append(f"{row['streams']} stream" + ("" if str(row["streams"]) == "1" else "s"))
    return " ".join(parts)


def summarize(measurements: pd.DataFrame) -> pd.DataFrame:
    """One row per campaign × array × target × fs_type × op × test, with SUMMARY_COLUMNS."""
    if measurements.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    groups = measurements.groupby(KEYS, sort=False, dropna=False)
    out = groups["mb_s"].agg(n="count", median="median", mean="mean", stdev="std")
    out[["median_durable", "mean_durable"]] = groups["mb_s_durable"].agg(["median", "mean"]).to_numpy()
    out = out.reset_index()

    n = out["n"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = student_t.ppf(0.975, n - 1) * out["stdev"].to_numpy(dtype=float) / np.sqrt(n)
        half[n < 2] = np.nan
        out["ci95_low"] = out["mean"] - half
        out["ci95_high"] = out["mean"] + half
        out["cv"] = (out["stdev"] / out["mean"]).replace([np.inf, -np.inf], np.nan)

    raw = out[out["target"] == "raw"].groupby(CELL, sort=False, dropna=False)["median"].first()
    raw_median = out[CELL].join(raw.rename("_raw"), on=CELL)["_raw"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["efficiency_vs_raw"] = (out["median"] / raw_median).replace([np.inf, -np.inf], np.nan)

    return sort_rows(out[SUMMARY_COLUMNS], ["campaign", "host", "array", "target", "op", *TEST])


def relative_ci(values) -> float:
    """Half-width of the 95% confidence interval of the mean (Student t), as a fraction of the median."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or not np.median(x) > 0:
        return float("nan")
    return float(student_t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)) / np.median(x))


# The figures a cell's repeats must pin down: both rates of a write, the rate of a read.
DECIDING = {"write": ["mb_s", "mb_s_durable"], "read": ["mb_s"]}


def repeat_decision(rows: list[dict], plan: dict) -> dict:
    """After len(rows)/2 repeats of a cell (its write and read rows): does it need another one?

    More while any deciding figure's relative CI exceeds plan['target_ci'] and fewer than plan['max']
    repeats are done. The answer says why, with every figure's CI.
    """
    frame = pd.DataFrame(rows)
    k = int(frame["rep"].nunique())
    ci = {
        f"{op}.{col}": relative_ci(frame.loc[frame["op"] == op, col]) for op, cols in DECIDING.items() for col in cols
    }
    worst = max(ci, key=lambda name: np.nan_to_num(ci[name], nan=np.inf))
    met = all(v <= plan["target_ci"] for v in ci.values())  # NaN (e.g. a zero median) never meets it
    if met:
        reason = f"target_ci: the widest 95% CI is {ci[worst]:.1%} of the median ({worst}) after {k} repeats"
    elif k >= plan["max"]:
        reason = f"max: {k} repeats, the widest 95% CI is still {ci[worst]:.1%} of the median ({worst})"
    else:
        reason = f"more: the widest 95% CI is {ci[worst]:.1%} of the median ({worst}) after {k} repeats"
    return {"repeats": k, "more": not met and k < plan["max"], "stopped": reason.split(":")[0], "reason": reason,
            "ci": ci, "plan": plan}  # fmt: skip


def summarize_baselines(rows: pd.DataFrame) -> pd.DataFrame:
    """summarize() per baseline (rows of baselines.csv), so each keeps its own target order, one after another."""
    if rows is None or rows.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    parts = [summarize(part) for _, part in rows.groupby("campaign", sort=False, dropna=False)]
    return pd.concat(parts, ignore_index=True)


def flag_above_raw(measurements: pd.DataFrame) -> pd.DataFrame:
    """A copy where filesystem rows faster than every raw repetition of their cell are flagged 'above-raw'.

    A filesystem cannot beat the device under it; when it seems to, the figure measured a cache.
    """
    out = measurements.copy()
    if out.empty:
        return out
    if "flags" not in out:
        out["flags"] = ""
    raw_max = out[out["target"] == "raw"].groupby(CELL, sort=False, dropna=False)["mb_s"].max()
    limit = out[CELL].join(raw_max.rename("_raw_max"), on=CELL)["_raw_max"]
    above = (out["target"] != "raw") & (out["mb_s"] > limit).fillna(False)

    def add(flags) -> str:
        have = [f for f in str(flags).split(";") if f] if pd.notna(flags) else []
        return ";".join(have if "above-raw" in have else [*have, "above-raw"])

    out["flags"] = out["flags"].astype(object)
    out.loc[above, "flags"] = out.loc[above, "flags"].map(add)
    return out


def _num(value) -> str:
    """Few enough digits to read at a glance, as many as small rates need."""
    if pd.isna(value):
        return "–"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _cell(row) -> str:
    if pd.isna(row["median"]):
        return "–"
    ci = f" [{_num(row['ci95_low'])}–{_num(row['ci95_high'])}]" if pd.notna(row["ci95_low"]) else ""
    return f"{_num(row['median'])} MB/s{ci} n={row['n']}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return [line(header), "|" + "|".join([" --- "] + [" ---: "] * (len(header) - 1)) + "|", *map(line, rows)]


def _target_name(target, fs_type) -> str:
    if target == "raw":
        return "Raw"
    if pd.isna(target) or str(target).strip() == "":
        return "unnamed"  # a dd log whose heading names no target
    return str(target) if str(fs_type) in (str(target), "nan", "") else f"{target} ({fs_type})"


def _op_name(op) -> str:
    return "op?" if pd.isna(op) or str(op).strip() == "" else str(op)  # a dd log that says neither write nor read


def _array_tables(part: pd.DataFrame) -> list[str]:
    """The tables of one campaign/array (or baseline): medians with CI, then durable writes and share of raw."""
    lines = []
    vary = varying(part)
    tests = sort_rows(part[["op", *TEST]].drop_duplicates(), [*TEST, "op"])
    # A column is one (op, test); its key finds the cell of each target.
    columns = [((r["op"], *r[TEST]), f"{_op_name(r['op'])} {test_label(r, vary)}") for _, r in tests.iterrows()]
    fixed = [c for c in ("pattern", "direct", "streams") if c not in vary]
    if fixed:
        first = part.iloc[0]
        said = {
            "pattern": str(first["pattern"]),
            "direct": "O_DIRECT" if _truthy(first["direct"]) else "buffered",
            "streams": f"{first['streams']} stream" + ("" if str(first["streams"]) == "1" else "s"),
        }
        lines += ["All tests: " + ", ".join(said[c] for c in fixed) + ".", ""]

    by_target: dict[str, dict] = {}
    for _, r in part.iterrows():
        by_target.setdefault(_target_name(r["target"], r["fs_type"]), {})[(r["op"], *r[TEST])] = r
    rows = [[name, *(_cell(cells[k]) if k in cells else "–" for k, _ in columns)] for name, cells in by_target.items()]
    lines += _table(["target", *(label for _, label in columns)], rows) + [""]

    # The seed's `real` line: what a user waits for, including the flush.
    durable = [c for c in columns if c[0][0] == "write"] if part["median_durable"].notna().any() else []
    ratio = columns if part["efficiency_vs_raw"].notna().any() else []
    if durable or ratio:
        header = [
            "target",
            *(f"{label} durable" for _, label in durable),
            *(f"{label} vs raw" for _, label in ratio),
        ]
        rows = []
        for name, cells in by_target.items():
            rate = [cells[k]["median_durable"] if k in cells else np.nan for k, _ in durable]
            share = [cells[k]["efficiency_vs_raw"] if k in cells else np.nan for k, _ in ratio]
            rows.append(
                [name, *(f"{_num(v)} MB/s" if pd.notna(v) else "–" for v in rate)]
                + [f"{v:.0%}" if pd.notna(v) else "–" for v in share]
            )
        lines += ["Durable write rate (median, including flush) and median as a share of raw:", ""]
        lines += _table(header, rows) + [""]
    return lines


def baseline_name(name, array, several_arrays: bool) -> str:
    """A baseline as a reader knows it: its config name, plus the array where that adds anything."""
    return f"{name} / {array}" if several_arrays or str(array) != str(name) else str(name)


def summary_markdown(summary: pd.DataFrame, title: str, baselines: pd.DataFrame | None = None) -> str:
    """summary.md: per array, the medians with their CI, then durable write rates and efficiency vs raw.

    `baselines` (the summary of baselines.csv, optional) follows in a section "Baselines", one heading per
    baseline with the same tables, so earlier figures can be read beside this campaign's.
    """
    lines = [f"# {title}", ""]
    if summary.empty:
        lines += ["No measurements.", ""]
    else:
        lines += [LEGEND, ""]
        several_campaigns = summary["campaign"].nunique(dropna=False) > 1
        for (campaign, array), part in summary.groupby(["campaign", "array"], sort=False, dropna=False):
            lines += [f"## {campaign} / {array}" if several_campaigns else f"## {array}", ""]
            lines += _array_tables(part)
    if baselines is not None and not baselines.empty:
        lines += [
            "## Baselines",
            "",
            "Earlier figures (CONTRACT.md `baselines:`), summarized exactly as this campaign's. For a pasted dd log "
            "each figure is one dd run: its rate as dd printed it, and as durable its shell `real` line where "
            "there is one.",
            "",
        ]
        for name, rows in baselines.groupby("campaign", sort=False, dropna=False):
            several_arrays = rows["array"].nunique(dropna=False) > 1
            for array, part in rows.groupby("array", sort=False, dropna=False):
                lines += [f"### {baseline_name(name, array, several_arrays)}", ""]
                lines += _array_tables(part)
    return "\n".join(lines)
