"""summary.md and summary.html: the tables and verdicts as a reader sees them (blocks rendered by
fsbench.report.document), built from summary.csv's and comparisons.csv's frames."""

import re

import pandas as pd

from fsbench.analysis.names import (
    UNDECIDED,
    baseline_parts,
    metric_name,
    op_name,
    p_text,
    places,
    several,
)
from fsbench.analysis.stats import (
    TEST,
    TOO_FEW,
    is_metadata,
    label_of_test,
    sort_rows,
    truthy,
    varying,
    varying_words,
)
from fsbench.analysis.validity import NOT_COMPARABLE, cell_reasons
from fsbench.engines.metadata import METADATA_PHASES
from fsbench.report.document import (
    Heading,
    Para,
    Rate,
    Table,
    Verdict,
    blocks_html,
    blocks_markdown,
    number,
)
from fsbench.toolkit import flags as flag_names
from fsbench.toolkit.flags import INVALIDATING, MEANING
from fsbench.toolkit.sizes import format_size

LEGEND = (
    "MB/s = 10^6 bytes/s, as dd prints it. Each cell: median of n repetitions, "
    "[95% confidence interval of the geometric mean: Student t on log(MB/s), never below zero]. "
    "Durable = including the flush to stable storage (the seed's `sync; time dd … && sync`, its `real` line)."
)


def _rate(row, stopped="") -> Rate:
    note = row.get("ci95_note")
    unit = row.get("unit")
    return Rate(
        row["median"],
        row["ci95_low"],
        row["ci95_high"],
        row["n"],
        flag_names.parse(row.get("flags")),
        stopped,
        str(note) if pd.notna(note) else "",
        str(unit) if isinstance(unit, str) else "MB/s",
        cell_reasons(row.get("flags")),
    )


# The verdict table that opens the summary (and `fsbench compare`): comparisons.csv as a reader needs it.
# At most this many decided comparisons are listed; the rest are counted (all are in the CSV).
MAX_VERDICTS = 30


def _where(row, vary, named: list[str]) -> str:
    """What a comparison holds fixed: 'demo: durable write 1MiB', 'demo ext4: read', 'node1 / demo: read 4MiB'
    (the target too where targets are not what is compared)."""
    place = " / ".join(str(row[c]) for c in named if pd.notna(row.get(c)))
    if row.get("vs") != "target" and pd.notna(row.get("target")):
        place = f"{place} {row['target']}".strip()
    size = [format_size(int(row["block_size"]))] if pd.notna(row.get("block_size")) else []
    what = " ".join([metric_name(row["op"], row["metric"]), *size, *varying_words(row, vary)])
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
            "their durable rate. Only valid figures answer: where a repeat of either side is not valid, the "
            "comparison is not comparable (docs/guide.md: Valid figures)."
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
                p_text(r["p_value"]),
                Verdict(str(r["verdict"]), not_comparable_why(r)),
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


def not_comparable_why(row) -> str:
    """Why a comparison is not comparable, the first part of its note ('ext4 not valid (short)'); '' otherwise."""
    if row["verdict"] != NOT_COMPARABLE:
        return ""
    return str(row.get("note", "")).split("; ")[0].removeprefix(f"{NOT_COMPARABLE}: ")


def _invalid_counts(invalid: pd.DataFrame) -> list[str]:
    """How many of the not comparable comparisons each invalidating flag stands behind: ['short 18', 'cached 2']."""
    counts: dict[str, int] = {}
    for _, r in invalid.iterrows():
        why = not_comparable_why(r)
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
    columns = [((r["op"], *r[TEST]), f"{op_name(r['op'])} {label_of_test(r, vary)}") for _, r in tests.iterrows()]
    first = part.iloc[0]
    depth = int(float(first["iodepth"])) if pd.notna(first.get("iodepth")) else 1
    # A depth of 1 (one call at a time, as dd) goes without saying unless it varies.
    fixed = [c for c in ("pattern", "direct", "streams", "iodepth") if c not in vary and (c, depth) != ("iodepth", 1)]
    if fixed:
        said = {
            "pattern": str(first["pattern"]),
            "direct": "O_DIRECT" if truthy(first["direct"]) else "buffered",
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
    # Tests as rows where they outnumber the targets (2 block sizes x 2 patterns x buffered/direct against a few
    # targets reads better as rows than as 16 columns of ops and tests).
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
        columns = [
            (p, s) for s in streams for p in METADATA_PHASES if ((part["op"] == p) & (part["streams"] == s)).any()
        ]
        label = {(p, s): p + (f" {s} streams" if len(streams) > 1 else "") for p, s in columns}
        by_target: dict[str, dict] = {}
        for _, r in part.iterrows():
            by_target.setdefault(_target_name(r["target"], r["fs_type"]), {})[(r["op"], r["streams"])] = r
        rows = [
            [target, *(_rate(cells[k]) if k in cells else "–" for k in columns)] for target, cells in by_target.items()
        ]
        blocks += [Heading(3, name), Table(["target", *(label[k] for k in columns)], rows)]
    return blocks


def _flags_said(*frames) -> list[str]:
    found = {}
    for frame in frames:
        if frame is not None and "flags" in frame:
            for flags in frame["flags"]:
                for f in flag_names.names(flags):
                    found.setdefault(f, None)
    # Which flags make a figure not valid is said with each (docs/guide.md: Valid figures).
    return [
        f"{f}: {MEANING.get(f, 'see measurements.csv')}{' (not valid)' if f in INVALIDATING else ' (a warning)'}"
        for f in found
    ]


def methods_said(summary: pd.DataFrame) -> list:
    """A paragraph where the campaign's cells of one workload were measured with different methods of fsbench."""
    if "method" not in summary:
        return []
    mixed = [
        part["method"].value_counts().sort_index()
        for _, part in summary.groupby("workload", sort=False)
        if part["method"].nunique() > 1 or part["method"].astype(str).str.contains(";").any()
    ]
    if not mixed:
        return []
    counts = ", ".join(f"method {m} in {n} {'cell' if n == 1 else 'cells'}" for c in mixed for m, n in c.items())
    return [
        Para(
            f"Measured with different methods of fsbench: {counts} (summary.csv's method column). A finished cell "
            "keeps the method it was measured with (`methods: recorded`); no verdict compares across methods."
        )
    ]


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
        blocks += methods_said(summary)
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
