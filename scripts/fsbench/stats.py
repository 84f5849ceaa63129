"""Statistics over measurements.csv: per-cell summaries, efficiency vs raw, the above-raw flag, adaptive repeats'
decisions, and the summary's tables as a reader sees them (rendered by fsbench.document as summary.md and
summary.html, the HTML shown in the report).

Throughput statistics are on mb_s (what dd prints); the durable columns come from mb_s_durable.
The 95 % interval is that of the geometric mean: a Student-t interval of the mean of log(rate), exponentiated
(log_interval), so it never goes below zero; one repeat gets none ("too few repeats for an interval").
Everything here is pure: frames in, new frames or text out.
"""

import re

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from .document import FLAG_MEANING, Heading, Para, Rate, Table, Verdict, blocks_html, blocks_markdown, number
from .sizes import format_size
from .validity import INVALIDATING, NOT_COMPARABLE, cell_reasons

# What makes two measurements the same test (besides op).
TEST = ["pattern", "block_size", "direct", "streams", "iodepth", "shared_file"]
KEYS = ["campaign", "host", "array", "target", "fs_type", "op", *TEST]
# Raw and filesystem rows are compared within this cell (raw has its own target and fs_type).
CELL = ["campaign", "host", "array", "op", *TEST]
STATS = ["n", "median", "mean", "stdev", "ci95_low", "ci95_high", "cv", "efficiency_vs_raw"]
# flags: every flag any repetition of the cell carries, `;`-separated, "(k of m)" where not all carry it.
# gmean: the geometric mean, the centre of the 95 % interval; ci95_note: why a cell has no interval (else empty).
# iops and the latency columns: medians over the repetitions (empty where the engine reports none).
PER_OPERATION = ["iops", "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us"]
# The metadata test's cells (workload metadata: op = phase, the figure = files per second).
META_KEYS = ["campaign", "host", "array", "target", "fs_type", "workload", "op"]
META_KEYS += ["files", "file_size", "dirs", "streams"]
PHASES = ["create", "stat", "read", "delete"]
SUMMARY_COLUMNS = [*KEYS, *STATS, "median_durable", "mean_durable", "flags", "gmean", "ci95_note", *PER_OPERATION]
SUMMARY_COLUMNS += ["workload", "unit", "files", "file_size", "dirs"]

LEGEND = (
    "MB/s = 10^6 bytes/s, as dd prints it. Each cell: median of n repetitions, "
    "[95% confidence interval of the geometric mean: Student t on log(MB/s), never below zero]. "
    "Durable = including the flush to stable storage (the seed's `sync; time dd … && sync`, its `real` line)."
)

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
    return " ".join([size, *_varying_words(row, vary)])


def _varying_words(row, vary) -> list[str]:
    words = []
    if "pattern" in vary:
        words.append(str(row["pattern"]))
    if "direct" in vary:
        words.append("direct" if _truthy(row["direct"]) else "buffered")
    if "streams" in vary:
        words.append(f"{row['streams']} stream" + ("" if str(row["streams"]) == "1" else "s"))
    if "iodepth" in vary:
        words.append(f"qd{int(float(row['iodepth']))}" if pd.notna(row["iodepth"]) else "qd?")
    if "shared_file" in vary:
        words.append("shared file" if _truthy(row["shared_file"]) else "file per stream")
    return words


def split_flags(flags) -> list[str]:
    """'short;cached' -> ['short', 'cached']; empty, NaN (an empty CSV cell) -> []."""
    return [f.strip() for f in str(flags).split(";") if f.strip()] if pd.notna(flags) else []


def cell_flags(values) -> str:
    """The flags of a cell's repetitions as one value: each flag once, in order of first appearance,
    with "(k of m)" when only k of the m repetitions carry it: 'short;cached (1 of 3)'."""
    values = list(values)
    counts: dict[str, int] = {}
    for flags in values:
        for flag in dict.fromkeys(split_flags(flags)):
            counts[flag] = counts.get(flag, 0) + 1
    return ";".join(f if k == len(values) else f"{f} ({k} of {len(values)})" for f, k in counts.items())


def with_iodepth(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows measured before iodepth and shared_file were columns (or by a tool without them) had one call at a
    time (depth 1), each stream in its own file."""
    depth = measurements["iodepth"].fillna(1) if "iodepth" in measurements else 1
    shared = measurements["shared_file"].map(_truthy) if "shared_file" in measurements else False
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


def _cell_stats(measurements: pd.DataFrame, keys: list[str], figure: str, durable: str) -> pd.DataFrame:
    """Per cell (`keys`): n, median, mean, stdev, the CI of the geometric mean, cv of `figure`; the median and mean
    of `durable`; the cell's flags and the medians of the per-operation columns."""
    groups = measurements.groupby(keys, sort=False, dropna=False)
    out = groups[figure].agg(n="count", median="median", mean="mean", stdev="std")
    out[["median_durable", "mean_durable"]] = groups[durable].agg(["median", "mean"]).to_numpy()
    out["flags"] = groups["flags"].agg(cell_flags).to_numpy() if "flags" in measurements else ""
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
    out = out.sort_values("op", key=lambda ops: ops.map({p: i for i, p in enumerate(PHASES)}), kind="stable")
    return sort_rows(out, ["campaign", "host", "array", "target", "streams"])[SUMMARY_COLUMNS]


def _summarize_io(measurements: pd.DataFrame) -> pd.DataFrame:
    if measurements.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    out = _cell_stats(with_iodepth(measurements), KEYS, "mb_s", "mb_s_durable")

    raw = out[out["target"] == "raw"].groupby(CELL, sort=False, dropna=False)["median"].first()
    raw_median = out[CELL].join(raw.rename("_raw"), on=CELL)["_raw"]
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


# The figures a cell's repeats must pin down: both rates of a write, the rate of a read.
DECIDING = {"write": ["mb_s", "mb_s_durable"], "read": ["mb_s"]}


# What a decision keeps of each comparison it weighed (fsbench.compare.questions).
QUESTION_KEYS = ("a", "b", "op", "metric", "ratio", "p_value", "verdict", "open", "valid_a", "valid_b")


def _question_text(q: dict) -> str:
    """'ext4 vs xfs durable write: slower (p=0.002)'; 'ext4 vs xfs read: not comparable (ext4 not valid: short)'."""
    said = f"p={_p_text(q['p_value'])}"
    if q["verdict"] == NOT_COMPARABLE:
        said = str(q.get("note", "")).split("; ")[0].removeprefix(f"{NOT_COMPARABLE}: ")
    return f"{q['a']} vs {q['b']} {metric_name(q['op'], q['metric'])}: {q['verdict']} ({said})"


def _listed(items: list[str], most: int = 3) -> str:
    more = f"; and {len(items) - most} more" if len(items) > most else ""
    return "; ".join(items[:most]) + more


def repeat_decision(rows: list[dict], plan: dict, questions: list[dict] | None = None) -> dict:
    """After len(rows)/2 repeats of a cell (its write and read rows): does it need another one?

    More, up to plan['max'] repeats, while any deciding figure's relative CI exceeds plan['target_ci'] (where
    given), and, with plan['decide'], while a comparison the cell is part of is open (`questions`, from
    fsbench.compare.questions: undecided, and decidable within max). The answer says why: which figure's CI,
    which comparison.
    """
    frame = pd.DataFrame(rows)
    k = int(frame["rep"].nunique())
    ci = {
        f"{op}.{col}": relative_ci(frame.loc[frame["op"] == op, col]) for op, cols in DECIDING.items() for col in cols
    }
    worst = max(ci, key=lambda name: np.nan_to_num(ci[name], nan=np.inf))
    target = plan["target_ci"]
    ci_met = target is None or all(v <= target for v in ci.values())  # NaN (e.g. a zero median) never meets it
    said = f"the widest 95% CI is {ci[worst]:.1%} of the median ({worst})"
    questions = questions or []
    undecided = [_question_text(q) for q in questions if q["open"]]
    wanted = ([said] if not ci_met else []) + undecided
    if wanted and k < plan["max"]:
        stopped, reason = "more", f"more: after {k} repeats, {_listed(wanted)}"
    elif wanted:
        stopped, reason = "max", f"max: {k} repeats, still {_listed(wanted)}"
    elif plan.get("decide"):
        # A comparison resting on a figure that is not valid is no answer, and more repeats cannot make it one.
        decided = [_question_text(q) for q in questions if q["verdict"] in ("faster", "slower")]
        hopeless = [_question_text(q) for q in questions if q["verdict"] not in ("faster", "slower")]
        if hopeless:
            stopped = "undecidable"
            reason = f"undecidable: after {k} repeats, not even {plan['max']} would decide {_listed(hopeless)}"
            reason += f"; decided: {_listed(decided)}" if decided else ""
        else:
            stopped = "decided"
            reason = f"decided: after {k} repeats, {_listed(decided) if decided else 'no comparison to make'}"
    else:
        stopped, reason = "target_ci", f"target_ci: {said} after {k} repeats"
    return {
        "repeats": k,
        "more": stopped == "more",
        "stopped": stopped,
        "reason": reason,
        "ci": ci,
        "questions": [{c: q.get(c) for c in QUESTION_KEYS} for q in questions],
        "plan": plan,
    }


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


def _rate(row, stopped="") -> Rate:
    note = row.get("ci95_note")
    unit = row.get("unit")
    return Rate(
        row["median"],
        row["ci95_low"],
        row["ci95_high"],
        row["n"],
        split_flags(row.get("flags")),
        stopped,
        str(note) if pd.notna(note) else "",
        str(unit) if isinstance(unit, str) else "MB/s",
        cell_reasons(row.get("flags")),
    )


# The verdict table that opens the summary (and `fsbench compare`): comparisons.csv as a reader needs it.
UNDECIDED = "no clear difference"
# At most this many decided comparisons are listed; the rest are counted (all are in the CSV).
MAX_VERDICTS = 30
# What each comparison's figure is, by (op, metric) of comparisons.csv.
METRIC_NAMES = {("write", "mb_s_durable"): "durable write", ("write", "mb_s"): "write", ("read", "mb_s"): "read"}


def metric_name(op, metric) -> str:
    """'durable write', 'read', 'read IOPS'."""
    if metric == "iops":
        return f"{_op_name(op)} IOPS"
    return METRIC_NAMES.get((op, metric), f"{_op_name(op)} {metric}")


def _p_text(p) -> str:
    return "–" if pd.isna(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


def _where(row, vary, named: list[str]) -> str:
    """What a comparison holds fixed: 'demo: durable write 1MiB', 'demo ext4: read', 'node1 / demo: read 4MiB'
    (the target too where targets are not what is compared)."""
    place = " / ".join(str(row[c]) for c in named if pd.notna(row.get(c)))
    if row.get("vs") != "target" and pd.notna(row.get("target")):
        place = f"{place} {row['target']}".strip()
    size = [format_size(int(row["block_size"]))] if pd.notna(row.get("block_size")) else []
    what = " ".join([metric_name(row["op"], row["metric"]), *size, *_varying_words(row, vary)])
    return f"{place}: {what}" if place else what


def verdict_blocks(comparisons: pd.DataFrame | None, source: str = "comparisons.csv") -> list:
    """The verdicts as blocks: a sentence on how they are made, the comparisons that found a difference (at most
    MAX_VERDICTS), then how many found none. Nothing when there are no comparisons."""
    if comparisons is None or comparisons.empty:
        return []
    invalid = comparisons[comparisons["verdict"] == NOT_COMPARABLE]
    decided = comparisons[~comparisons["verdict"].isin([UNDECIDED, NOT_COMPARABLE])]
    undecided = comparisons[comparisons["verdict"] == UNDECIDED]
    vary = varying(comparisons) + [c for c in ("iodepth", "shared_file") if several(comparisons, c)]
    named = [c for c in ("campaign", "host", "array") if c in comparisons and several(comparisons, c)]
    named = named or (["array"] if "array" in comparisons and comparisons["array"].notna().any() else [])
    blocks: list = [
        Para(
            "Verdicts, a relative to b: ratio = a's median / b's, its 95% interval and p from Welch's t-test "
            "on log(rate); faster or slower where the interval excludes 1 (p < 0.05). Writes are compared by "
            "their durable rate. Only valid figures answer: where a side has a repeat that is not valid, the "
            "comparison is not comparable (README, Valid figures)."
        )
    ]
    # The valid answers lead; those resting on a figure that is not valid follow, greyed, never as a verdict.
    listed = pd.concat([decided, invalid]).head(MAX_VERDICTS)
    if len(listed):
        rows = [
            [
                f"{r['a']} vs {r['b']}",
                _where(r, vary, named),
                f"{number(r['ratio'])} [{number(r['ci_low'])}–{number(r['ci_high'])}]",
                _p_text(r["p_value"]),
                Verdict(str(r["verdict"]), _not_comparable_why(r)),
            ]
            for _, r in listed.iterrows()
        ]
        blocks.append(Table(["a vs b", "where", "ratio a/b [95% CI]", "p", "verdict"], rows))
    said = []
    if len(decided) > MAX_VERDICTS:
        said.append(f"{len(decided) - MAX_VERDICTS} more with a clear difference are in {source}.")
    if len(invalid):
        more = max(0, len(invalid) - max(0, MAX_VERDICTS - len(decided)))
        said.append(
            f"Not comparable: {len(invalid)} of {len(comparisons)} comparisons rest on a figure that is not valid "
            f"({', '.join(_invalid_counts(invalid))})" + (f"; {more} of them only in {source}." if more else ".")
        )
    few = int(undecided["note"].fillna("").str.contains(TOO_FEW, regex=False).sum()) if "note" in undecided else 0
    if len(undecided):
        which = f" ({few} of them with {TOO_FEW})" if few else ""
        lead = "No comparison shows a clear difference" if decided.empty else "No clear difference"
        said.append(f"{lead}: {len(undecided)} of {len(comparisons)} comparisons{which}; all are in {source}.")
    elif invalid.empty:
        said.append(f"All {len(comparisons)} comparisons show a clear difference; all are in {source}.")
    return [*blocks, Para(" ".join(said))]


def _not_comparable_why(row) -> str:
    """Why a comparison is not comparable: the first part of its note ('ext4 not valid: short'); '' otherwise."""
    if row["verdict"] != NOT_COMPARABLE:
        return ""
    return str(row.get("note", "")).split("; ")[0].removeprefix(f"{NOT_COMPARABLE}: ")


def _invalid_counts(invalid: pd.DataFrame) -> list[str]:
    """How often each invalidating flag stands behind the not comparable comparisons: ['short: 18', 'cached: 2']."""
    counts: dict[str, int] = {}
    for _, r in invalid.iterrows():
        why = _not_comparable_why(r)
        for flag in INVALIDATING:
            if re.search(rf"(?<![\w-]){flag}(?![\w-])", why):
                counts[flag] = counts.get(flag, 0) + 1
    return [f"{flag} {k}" for flag, k in counts.items()]


def _target_name(target, fs_type) -> str:
    if target == "raw":
        return "Raw"
    if pd.isna(target) or str(target).strip() == "":
        return "unnamed"  # a dd log whose heading names no target
    return str(target) if str(fs_type) in (str(target), "nan", "") else f"{target} ({fs_type})"


def _op_name(op) -> str:
    return "op?" if pd.isna(op) or str(op).strip() == "" else str(op)  # a dd log that says neither write nor read


def _stops(part: pd.DataFrame, vary) -> tuple[dict, list]:
    """How the cells of one array stopped repeating: (the `stopped` word to show in each cell, keyed like the
    cells, empty where all cells stopped alike; the blocks that say why)."""
    if "stop_reason" not in part or part["stop_reason"].isna().all():
        return {}, []
    stopped = part["stopped"] if "stopped" in part else pd.Series("", index=part.index)
    mark = {}
    if stopped.nunique(dropna=False) > 1:
        mark = {(r["target"], r["op"], *r[TEST]): str(r["stopped"]) for _, r in part.iterrows()}
    if part["stop_reason"].nunique(dropna=False) == 1:
        word, _, detail = str(part["stop_reason"].iloc[0]).partition(": ")
        said = f"{word} ({detail})" if detail else word
        return mark, [Para(f"How the cells stopped repeating: all alike, {said}.")]
    # Write and read of a cell repeat together: one reason per target and test.
    tests = sort_rows(part[TEST].drop_duplicates(), TEST)
    columns = [(tuple(r[TEST]), label_of_test(r, vary)) for _, r in tests.iterrows()]
    reasons: dict[str, dict] = {}
    for _, r in part.iterrows():
        reasons.setdefault(_target_name(r["target"], r["fs_type"]), {})[tuple(r[TEST])] = r["stop_reason"]
    rows = [[name, *(str(cells.get(k, "–")) for k, _ in columns)] for name, cells in reasons.items()]
    return mark, [
        Para("How the cells stopped repeating (a cell's write and read repeat together):"),
        Table(["target", *(label for _, label in columns)], rows, prose=True),
    ]


def _array_tables(part: pd.DataFrame) -> list:
    """The tables of one campaign/host/array (or baseline): medians with CI, then durable writes and share of
    raw, then how the cells stopped repeating."""
    blocks: list = []
    vary = varying(part)
    tests = sort_rows(part[["op", *TEST]].drop_duplicates(), [*TEST, "op"])
    # A column is one (op, test); its key finds the cell of each target.
    columns = [((r["op"], *r[TEST]), f"{_op_name(r['op'])} {label_of_test(r, vary)}") for _, r in tests.iterrows()]
    first = part.iloc[0]
    depth = int(float(first["iodepth"])) if pd.notna(first.get("iodepth")) else 1
    # A depth of 1 (one call at a time, as dd) goes without saying unless it varies.
    fixed = [c for c in ("pattern", "direct", "streams", "iodepth") if c not in vary and (c, depth) != ("iodepth", 1)]
    if fixed:
        said = {
            "pattern": str(first["pattern"]),
            "direct": "O_DIRECT" if _truthy(first["direct"]) else "buffered",
            "streams": f"{first['streams']} stream" + ("" if str(first["streams"]) == "1" else "s"),
            "iodepth": f"{depth} I/Os in flight per stream",
        }
        blocks.append(Para("All tests: " + ", ".join(said[c] for c in fixed) + "."))

    mark, stops = _stops(part, vary)
    by_target: dict[str, dict] = {}
    for _, r in part.iterrows():
        by_target.setdefault(_target_name(r["target"], r["fs_type"]), {})[(r["op"], *r[TEST])] = r
    rows = [
        [name, *(_rate(cells[k], mark.get((cells[k]["target"], *k), "")) if k in cells else "–" for k, _ in columns)]
        for name, cells in by_target.items()
    ]
    # Tests as rows where they outnumber the targets (2 block sizes x 2 patterns x buffered/direct: 16 columns of
    # ops and tests against a few targets reads better as 16 rows).
    turn = len(tests[TEST].drop_duplicates()) > len(by_target)
    blocks.append(_laid_out(Table(["target", *(label for _, label in columns)], rows), turn))

    # The seed's `real` line: what a user waits for, including the flush.
    durable = [c for c in columns if c[0][0] == "write"] if part["median_durable"].notna().any() else []
    ratio = columns if part["efficiency_vs_raw"].notna().any() else []
    if durable or ratio:
        header = [
            "target",
            *(f"{label} durable" for _, label in durable),
            *(f"{label} vs raw" for _, label in ratio),
        ]
        raw = by_target.get("Raw", {})

        def shown(text, *cells) -> str:
            # A figure from a cell that is not valid (or a share of a raw that is not) says so.
            return f"{text} (not valid)" if any(c is not None and cell_reasons(c.get("flags")) for c in cells) else text

        rows = []
        for name, cells in by_target.items():
            rate = [
                shown(f"{number(cells[k]['median_durable'])} MB/s", cells[k])
                if k in cells and pd.notna(cells[k]["median_durable"])
                else "–"
                for k, _ in durable
            ]
            share = [
                shown(f"{cells[k]['efficiency_vs_raw']:.0%}", cells[k], raw.get(k))
                if k in cells and pd.notna(cells[k]["efficiency_vs_raw"])
                else "–"
                for k, _ in ratio
            ]
            rows.append([name, *rate, *share])
        blocks += [Para("Durable write rate (median, including flush) and median as a share of raw:")]
        blocks += [_laid_out(Table(header, rows), turn)]
    return blocks + [_laid_out(b, turn) if isinstance(b, Table) else b for b in stops]


def _laid_out(table: Table, turn: bool) -> Table:
    """`table` (targets as rows, tests as columns) as it is, or turned: tests as rows, targets as columns."""
    if not turn:
        return table
    rows = [[label, *(row[i] for row in table.rows)] for i, label in enumerate(table.header[1:], start=1)]
    return Table(["test", *(row[0] for row in table.rows)], rows, table.prose)


def metadata_blocks(summary: pd.DataFrame) -> list:
    """The metadata test's section: per array, files per second of each phase by target."""
    first = summary.iloc[0]
    said = (
        f"{int(first['files'])} files of {format_size(int(first['file_size']))} in {int(first['dirs'])} "
        "directories per stream"
    )
    blocks: list = [
        Heading(2, "Metadata: files per second"),
        Para(
            f"The metadata test ({said}): each phase's files over its time, from the first stream's start to the "
            "last one's end; median of the repetitions [95% CI of the geometric mean]. create = open, write, close "
            "(durable: with its fsync policy's flush); the cache is made cold before stat and read."
        ),
    ]
    for name, part in places(summary):
        streams = sorted(part["streams"].unique())
        columns = [(p, s) for s in streams for p in PHASES if ((part["op"] == p) & (part["streams"] == s)).any()]
        label = {(p, s): p + (f" {s} streams" if len(streams) > 1 else "") for p, s in columns}
        by_target: dict[str, dict] = {}
        for _, r in part.iterrows():
            by_target.setdefault(_target_name(r["target"], r["fs_type"]), {})[(r["op"], r["streams"])] = r
        rows = [
            [target, *(_rate(cells[k]) if k in cells else "–" for k in columns)] for target, cells in by_target.items()
        ]
        blocks += [Heading(3, name), Table(["target", *(label[k] for k in columns)], rows)]
    return blocks


def several(frame: pd.DataFrame, column: str) -> bool:
    return column in frame and frame[column].nunique(dropna=False) > 1


def place_name(keys: dict, frame: pd.DataFrame) -> str:
    """'array', or 'campaign / host / array' with each part that tells sections of `frame` apart."""
    parts = [keys[c] for c in ("campaign", "host") if c in keys and several(frame, c)]
    return " / ".join(str(p) for p in [*parts, keys["array"]])


def places(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows) per campaign, host and array in `frame`, in its order; the host is named only when there
    is more than one."""
    by = [c for c in ("campaign", "host", "array") if c in frame]
    return [
        (place_name(dict(zip(by, key, strict=True)), frame), part)
        for key, part in frame.groupby(by, sort=False, dropna=False)
    ]


def baseline_name(name, array, several_arrays: bool, host=None) -> str:
    """A baseline as a reader knows it: its config name, plus the host (given where it has several) and the
    array where that adds anything."""
    if host is not None:
        return f"{name} / {host} / {array}"
    return f"{name} / {array}" if several_arrays or str(array) != str(name) else str(name)


def baseline_parts(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows) per baseline, and within one per host (where it has several) and array."""
    out = []
    for name, part in rows.groupby("campaign", sort=False, dropna=False):
        hosts = several(part, "host")
        by = ["host", "array"] if hosts else ["array"]
        several_arrays = part["array"].nunique(dropna=False) > 1
        for key, rows_ in part.groupby(by, sort=False, dropna=False):
            host, array = key if hosts else (None, key[0])
            out.append((baseline_name(name, array, several_arrays, host), rows_))
    return out


def _flags_said(*frames) -> list[str]:
    found = {}
    for frame in frames:
        if frame is not None and "flags" in frame:
            for flags in frame["flags"]:
                for f in split_flags(flags):
                    found.setdefault(f.split(" (")[0], None)
    return [f"{f}: {FLAG_MEANING.get(f, 'see measurements.csv')}" for f in found]


def summary_blocks(
    summary: pd.DataFrame, title: str, baselines: pd.DataFrame | None = None, comparisons: pd.DataFrame | None = None
) -> list:
    """summary.md and summary.html as blocks: the verdicts (`comparisons`, comparisons.csv, optional) first, then
    per array the medians with their CI, durable write rates and efficiency vs raw, and how the cells stopped
    repeating.

    `baselines` (the summary of baselines.csv, optional) follows in a section "Baselines", one heading per
    baseline with the same tables, so earlier figures can be read beside this campaign's.
    """
    blocks: list = [Heading(1, title), *verdict_blocks(comparisons)]
    if summary.empty:
        blocks.append(Para("No measurements."))
    else:
        blocks.append(Para(LEGEND))
        flags = _flags_said(summary, baselines)
        if flags:
            blocks.append(
                Para(
                    "Flags, where a figure's repetitions carry one (k of m: only some of them): "
                    + "; ".join(flags)
                    + "."
                )
            )
        meta = is_metadata(summary)
        for name, part in places(summary[~meta]):
            blocks += [Heading(2, name), *_array_tables(part)]
        if meta.any():
            blocks += metadata_blocks(summary[meta])
    if baselines is not None and not baselines.empty:
        blocks += [
            Heading(2, "Baselines"),
            Para(
                "Earlier figures (docs/contract.md `baselines:`), summarized exactly as this campaign's. "
                "For a pasted dd log each figure is one dd run: its rate as dd printed it, and as durable "
                "its shell `real` line where there is one."
            ),
        ]
        for name, part in baseline_parts(baselines):
            blocks += [Heading(3, name), *_array_tables(part)]
    return blocks


def summary_markdown(
    summary: pd.DataFrame, title: str, baselines: pd.DataFrame | None = None, comparisons: pd.DataFrame | None = None
) -> str:
    """summary.md: summary_blocks() as Markdown, laid out like the seed's summary."""
    return blocks_markdown(summary_blocks(summary, title, baselines, comparisons))


def summary_html(
    summary: pd.DataFrame, title: str, baselines: pd.DataFrame | None = None, comparisons: pd.DataFrame | None = None
) -> str:
    """summary.html: the tables of summary.md as one self-contained page (no script, nothing fetched), for the
    report to show inline."""
    note = "The same figures unrounded: summary.csv and comparisons.csv; every repetition: measurements.csv."
    return blocks_html(summary_blocks(summary, title, baselines, comparisons), title, note)
