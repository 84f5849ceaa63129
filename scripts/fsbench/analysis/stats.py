"""Statistics over measurements.csv: per-cell summaries, efficiency vs raw, the above-raw flag, and how cells
are keyed, sorted and labelled (the summary's rendering is fsbench.report.summary, adaptive repeats'
decisions fsbench.analysis.repeats).

Throughput statistics are on mb_s (what dd prints); the durable columns come from mb_s_durable.
The 95 % interval is that of the geometric mean: a Student-t interval of the mean of log(rate), exponentiated
(log_interval), so it never goes below zero; one repeat gets none ("too few repeats for an interval").
Everything here is pure: frames in, new frames or text out.
"""

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from fsbench.engines.metadata import METADATA_PHASES
from fsbench.measurement.rows import TEST
from fsbench.toolkit import flags
from fsbench.toolkit.sizes import format_size

# What makes two measurements the same test (besides op).
KEYS = ["campaign", "host", "array", "target", "fs_type", "op", *TEST]
# Raw and filesystem rows are compared within these columns (raw has its own target and fs_type).
BESIDE_RAW = ["campaign", "host", "array", "op", *TEST]
STATS = ["n", "median", "mean", "stdev", "ci95_low", "ci95_high", "cv", "efficiency_vs_raw"]
# flags: every flag any repetition of the cell carries, `;`-separated, "(k of m)" where not all carry it.
# gmean: the geometric mean, the centre of the 95 % interval; ci95_note: why a cell has no interval (else empty).
# iops and the latency columns: medians over the repetitions (empty where the engine reports none).
PER_OPERATION = ["iops", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us"]
# The metadata test's cells (workload metadata: op = phase, the figure = files per second).
META_KEYS = ["campaign", "host", "array", "target", "fs_type", "workload", "op"]
META_KEYS += ["files", "file_size", "dirs", "streams"]
SUMMARY_COLUMNS = [*KEYS, *STATS, "median_durable", "mean_durable", "flags", "gmean", "ci95_note", *PER_OPERATION]
SUMMARY_COLUMNS += ["workload", "unit", "files", "file_size", "dirs", "method"]

# Why a cell or a comparison has no interval (summary.csv ci95_note, comparisons.csv note).
TOO_FEW = "too few repeats for an interval"
NOT_POSITIVE = "a rate of zero: no interval on the log scale"


def log_interval(values, level: float = 0.95) -> tuple[float, float, str]:
    """(low, high, why not) of the `level` confidence interval of the geometric mean of `values`:
    exp(mean(log x) ± t(n-1) · sd(log x) / sqrt(n)). Positive by construction; exact for lognormal repeats.

    Missing values are left out. Fewer than 2 values: no interval (TOO_FEW); a value of zero or below: none
    (NOT_POSITIVE); all values equal: an interval of zero width at that value.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if len(x) < 2:
        return np.nan, np.nan, TOO_FEW
    if not (x > 0).all():
        return np.nan, np.nan, NOT_POSITIVE
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0]), ""
    logs = np.log(x)
    half = student_t.ppf(0.5 + level / 2, len(x) - 1) * logs.std(ddof=1) / np.sqrt(len(x))
    return float(np.exp(logs.mean() - half)), float(np.exp(logs.mean() + half)), ""


def geometric_mean(values) -> float:
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    return float(np.exp(np.log(x).mean())) if len(x) and (x > 0).all() else np.nan


def truthy(value) -> bool:
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
        return values.map(truthy).to_numpy(dtype=float)  # buffered before direct
    if column in ("block_size", "streams", "iodepth"):
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
    axes = ("pattern", "direct", "streams", "iodepth", "shared_file")
    return [c for c in axes if c in frame and frame[c].nunique(dropna=False) > 1]


def label_of_test(row, vary=()) -> str:
    """'1MiB', plus pattern/direct/streams/depth where they vary: '4MiB rand direct 8 streams qd32'."""
    size = format_size(int(row["block_size"])) if pd.notna(row.get("block_size")) else "?"
    return " ".join([size, *varying_words(row, vary)])


def varying_words(row, vary) -> list[str]:
    words = []
    if "pattern" in vary:
        words.append(str(row["pattern"]))
    if "direct" in vary:
        words.append("direct" if truthy(row["direct"]) else "buffered")
    if "streams" in vary:
        words.append(f"{row['streams']} stream" + ("" if str(row["streams"]) == "1" else "s"))
    if "iodepth" in vary:
        words.append(f"qd{int(float(row['iodepth']))}" if pd.notna(row["iodepth"]) else "qd?")
    if "shared_file" in vary:
        words.append("shared file" if truthy(row["shared_file"]) else "file per stream")
    return words


def cell_flags(values) -> str:
    """The flags of a cell's repetitions as one value: each flag once, in order of first appearance,
    with "(k of m)" when only k of the m repetitions carry it: 'short;cached (1 of 3)'."""
    values = list(values)
    counts: dict[str, int] = {}
    for value in values:
        for flag in dict.fromkeys(flags.parse(value)):
            counts[flag] = counts.get(flag, 0) + 1
    return flags.join(f if k == len(values) else f"{f} ({k} of {len(values)})" for f, k in counts.items())


def with_iodepth(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows measured before iodepth and shared_file were columns (or by a tool without them) had one call at a
    time (depth 1), each stream in its own file."""
    depth = measurements["iodepth"].fillna(1) if "iodepth" in measurements else 1
    shared = measurements["shared_file"].map(truthy) if "shared_file" in measurements else False
    return measurements.assign(iodepth=depth, shared_file=shared)


def is_metadata(frame: pd.DataFrame) -> pd.Series:
    """Which rows are the metadata test's (workload metadata); rows without the column are block I/O."""
    return frame["workload"].eq("metadata") if "workload" in frame else pd.Series(False, index=frame.index)


def summarize(measurements: pd.DataFrame) -> pd.DataFrame:
    """One row per campaign × array × target × fs_type × op × test, with SUMMARY_COLUMNS: block I/O in MB/s,
    then the metadata test's phases in files per second."""
    if measurements.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    meta = is_metadata(measurements)
    parts = [_summarize_io(measurements[~meta]), summarize_metadata(measurements[meta])]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True)[SUMMARY_COLUMNS] if parts else pd.DataFrame(columns=SUMMARY_COLUMNS)


def methods_of(values) -> str:
    """The method versions of a cell's repeats, in order: "2", or "2;3" where they differ."""
    return ";".join(str(int(v)) for v in sorted(set(pd.Series(values).dropna())))


def _cell_stats(measurements: pd.DataFrame, keys: list[str], figure: str, durable: str) -> pd.DataFrame:
    """Per cell (`keys`): n, median, mean, stdev, the CI of the geometric mean, cv of `figure`; the median and mean
    of `durable`; the cell's flags and the medians of the per-operation columns."""
    groups = measurements.groupby(keys, sort=False, dropna=False)
    out = groups[figure].agg(n="count", median="median", mean="mean", stdev="std")
    out[["median_durable", "mean_durable"]] = groups[durable].agg(["median", "mean"]).to_numpy()
    out["flags"] = groups["flags"].agg(cell_flags).to_numpy() if "flags" in measurements else ""
    # The method versions its repeats were measured with (methods: recorded keeps a finished repeat's), e.g. "2;3".
    out["method"] = groups["method"].agg(methods_of).to_numpy() if "method" in measurements else ""
    for column in PER_OPERATION:
        out[column] = groups[column].median().to_numpy() if column in measurements else np.nan
    out = out.reset_index()
    intervals = [log_interval(values) for _, values in groups[figure]]
    out["ci95_low"], out["ci95_high"], out["ci95_note"] = ([i[k] for i in intervals] for k in range(3))
    out["gmean"] = [geometric_mean(values) for _, values in groups[figure]]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["cv"] = (out["stdev"] / out["mean"]).replace([np.inf, -np.inf], np.nan)
    return out


def summarize_metadata(measurements: pd.DataFrame) -> pd.DataFrame:
    """The metadata cells: per phase, files per second (iops) with the same statistics as a rate; durable =
    files over seconds_durable (a create's syncfs included)."""
    if measurements.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    m = measurements.assign(files_per_s_durable=measurements["ops"] / measurements["seconds_durable"])
    out = _cell_stats(m, META_KEYS, "iops", "files_per_s_durable")
    out = out.assign(efficiency_vs_raw=np.nan, unit="files/s")
    out = out.assign(**{c: np.nan for c in SUMMARY_COLUMNS if c not in out})
    # Phases in their order within each target (a stable sort keeps it), targets in the campaign's.
    out = out.sort_values("op", key=lambda ops: ops.map({p: i for i, p in enumerate(METADATA_PHASES)}), kind="stable")
    return sort_rows(out, ["campaign", "host", "array", "target", "streams"])[SUMMARY_COLUMNS]


def _summarize_io(measurements: pd.DataFrame) -> pd.DataFrame:
    if measurements.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    out = _cell_stats(with_iodepth(measurements), KEYS, "mb_s", "mb_s_durable")

    raw = out[out["target"] == "raw"].groupby(BESIDE_RAW, sort=False, dropna=False)["median"].first()
    raw_median = out[BESIDE_RAW].join(raw.rename("_raw"), on=BESIDE_RAW)["_raw"]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["efficiency_vs_raw"] = (out["median"] / raw_median).replace([np.inf, -np.inf], np.nan)

    out = out.assign(workload="io", unit="MB/s", files=np.nan, file_size=np.nan, dirs=np.nan)
    return sort_rows(out[SUMMARY_COLUMNS], ["campaign", "host", "array", "target", "op", *TEST])


def relative_ci(values) -> float:
    """Half the width of the 95% interval the tables show (log_interval), as a fraction of the median;
    NaN where there is no interval (one repeat, a zero rate)."""
    x = np.asarray(values, dtype=float)
    low, high, _ = log_interval(x)
    if np.isnan(low) or not np.nanmedian(x) > 0:
        return float("nan")
    return float((high - low) / 2 / np.nanmedian(x))


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
    raw_max = out[out["target"] == "raw"].groupby(BESIDE_RAW, sort=False, dropna=False)["mb_s"].max()
    limit = out[BESIDE_RAW].join(raw_max.rename("_raw_max"), on=BESIDE_RAW)["_raw_max"]
    above = (out["target"] != "raw") & (out["mb_s"] > limit).fillna(False)

    out["flags"] = out["flags"].astype(object)
    out.loc[above, "flags"] = out.loc[above, "flags"].map(lambda f: flags.add(f, [flags.ABOVE_RAW]))
    return out
