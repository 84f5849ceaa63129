"""IOPS, latency under load and latency percentiles, per test."""

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import (
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
)

from fsbench.analysis.stats import (
    TEST,
    label_of_test,
    sort_rows,
    varying,
    with_iodepth,
)
from fsbench.analysis.validity import cell_reasons
from fsbench.plots.bars import (
    MAX_LABELLED_BARS,
    OPS,
    _colours,
    _legend,
    _positions,
)
from fsbench.toolkit.sizes import format_size


def _io_test(row) -> str:
    """A test as a panel or tick names it: pattern, block size, buffered/direct, streams, queue depth."""
    io = "direct" if row["direct"] in (True, "True") else "buffered"
    depth = int(row["iodepth"]) if "iodepth" in row and pd.notna(row["iodepth"]) else 1
    shared = " shared" if str(row.get("shared_file")).lower() in ("true", "1") else ""
    return f"{row['pattern']} {format_size(int(row['block_size']))} {io} {int(row['streams'])}s qd{depth}{shared}"


def _medians(measurements: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Per host, array, target, op and test: the median over the repetitions of each column."""
    df = with_iodepth(measurements)
    keys = ["host", "array", "target", "op", *TEST]
    df = df.dropna(subset=[columns[0]])
    if df.empty:
        return df
    out = df.groupby(keys, sort=False, dropna=False)[columns].median().reset_index()
    out["test"] = out.apply(_io_test, axis=1)
    # What is drawn side by side: the target, with its host and array where there are several of them.
    several = [c for c in ("host", "array") if out[c].nunique(dropna=False) > 1]
    out["target"] = out.apply(lambda r: " ".join([*(str(r[c]) for c in several), str(r["target"])]), axis=1)
    return out


def _by_op(data: pd.DataFrame, column: str, values) -> list[tuple[str, object]]:
    """A panel per op and value of `column` (in the order of `values`) that has rows."""
    return [
        (op, value)
        for op in OPS
        for value in dict.fromkeys(values)
        if ((data["op"] == op) & (data[column] == value)).any()
    ]


def iops(measurements: pd.DataFrame) -> Figure | None:
    """IOPS on a log axis: per op and pattern a panel, targets side by side per block size and queue depth."""
    data = _medians(measurements, ["iops"])
    if data.empty:
        return None
    targets, colours = _colours(data["target"])
    panels = _by_op(data, "pattern", data["pattern"])
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(7, 1.6 * data["test"].nunique() + 3), 3.6 * len(panels)),
        squeeze=False,
        layout="constrained",
    )
    for ax, (op, pattern) in zip(axes[:, 0], panels, strict=True):
        part = data[(data["op"] == op) & (data["pattern"] == pattern)]
        tests = list(dict.fromkeys(part.sort_values(["block_size", "iodepth", "streams", "direct"])["test"]))
        at, width = _positions(len(targets))
        for _, row in part.iterrows():
            x = at(tests.index(row["test"]), targets.index(row["target"]))
            ax.bar(x, row["iops"], width * 0.92, color=colours[row["target"]])
            if len(part) <= MAX_LABELLED_BARS:
                ax.text(x, row["iops"] * 1.08, f"{row['iops']:,.0f}", ha="center", va="bottom", fontsize=7, rotation=90)
        ax.set_yscale("log")
        ax.set_xticks(range(len(tests)), [t.replace(f"{pattern} ", "").replace(" ", "\n") for t in tests])
        ax.set_title(f"{op} · {pattern}")
        ax.set_ylabel("IOPS (median, log)")
        top = part["iops"].max()
        ax.set_ylim(part["iops"].min() / 3, top * 4)
    fig.suptitle(
        "Operations per second by target, block size and queue depth (qd)\nmedian of the repetitions", fontsize=13
    )
    _legend(fig, targets, colours, "target")
    return fig


# The panels of the latency pictures: one per op and test, the queue depth being what a curve runs through.
PANEL = ["op", "pattern", "block_size", "direct", "streams", "shared_file"]


def _panel_title(row, vary) -> str:
    """'read · rand 4KiB' plus direct/streams/shared file where they vary."""
    words = [w for w in label_of_test(row, [v for v in vary if v != "iodepth"]).split(" ")]
    pattern = [] if "pattern" in vary else [str(row["pattern"])]
    return f"{row['op']} · {' '.join([*pattern, *words])}"


# At most this many latency panels side by side; more wrap onto the next row.
LATENCY_COLUMNS = 4


def _latency_panels(data: pd.DataFrame) -> tuple[Figure, list]:
    """A figure with a panel per op and test of `data` (writes first, each op's tests in order, LATENCY_COLUMNS to
    a row), and [(axes, its rows)]."""
    data = sort_rows(with_iodepth(data), PANEL)
    key = data[PANEL[1:]].astype(str).apply(tuple, axis=1)
    ops = [op for op in dict.fromkeys(data["op"]) if op in OPS] or list(dict.fromkeys(data["op"]))
    ops = sorted(ops, key=lambda op: OPS.index(op) if op in OPS else len(OPS))
    panels = []
    for op in ops:
        for test in dict.fromkeys(key[data["op"] == op]):
            panels.append(data[(data["op"] == op) & (key == test)])
    n_cols = min(LATENCY_COLUMNS, len(panels))
    n_rows = -(-len(panels) // n_cols)
    fig = Figure(figsize=(1.0 + 4.4 * n_cols, 1.8 + 3.7 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False).ravel()
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    return fig, list(zip(axes, panels, strict=False))


def _latency_labels(ax, title: str, xlabel: str) -> None:
    """A latency panel's title, axis labels (latency per operation up) and grid."""
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("µs per operation (log)")
    ax.grid(True, which="both", axis="both", alpha=0.3)


def latency(measurements: pd.DataFrame) -> Figure | None:
    """The classic load-latency curve: per op and test a panel, IOPS on x, p99 (solid) and p50 (dashed) latency on
    y, both log; one line per target through its queue depths (medians of the repetitions). A point of a cell that
    is not valid is hollow."""
    columns = ["iops", "lat_p50_us", "lat_p99_us"]
    if not set(columns) <= set(measurements.columns):
        return None
    data = with_iodepth(measurements).dropna(subset=columns)
    if data.empty:
        return None
    data = data.assign(invalid=data["flags"].map(lambda f: bool(cell_reasons(f))) if "flags" in data else False)
    keys = ["host", "array", "target", *PANEL, "iodepth"]
    medians = data.groupby(keys, sort=False, dropna=False)[columns].median()
    medians["invalid"] = data.groupby(keys, sort=False, dropna=False)["invalid"].any()
    medians = medians.reset_index()
    several = [c for c in ("host", "array") if medians[c].nunique(dropna=False) > 1]
    medians["line"] = [" ".join([*(str(r[c]) for c in several), str(r["target"])]) for _, r in medians.iterrows()]
    lines, colours = _colours(medians["line"])
    vary = varying(medians)
    fig, panels = _latency_panels(medians)
    for ax, part in panels:
        for line in lines:
            mine = part[part["line"] == line].sort_values("iodepth")
            if mine.empty:
                continue
            for column, style, marker in (("lat_p99_us", "-", "D"), ("lat_p50_us", "--", "o")):
                ax.plot(mine["iops"], mine[column], ls=style, color=colours[line], lw=1.6, alpha=0.9)
                for _, r in mine.iterrows():
                    face = "white" if r["invalid"] else colours[line]
                    ax.plot(r["iops"], r[column], marker=marker, ms=7, mfc=face, mec=colours[line], ls="")
            if mine["iodepth"].nunique() > 1 or "iodepth" in vary:
                for _, r in mine.iterrows():
                    ax.annotate(
                        f"qd{int(r['iodepth'])}",
                        (r["iops"], r["lat_p99_us"]),
                        textcoords="offset points",
                        xytext=(5, 4),
                        fontsize=8,
                        color=colours[line],
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_ticks(ax.xaxis, ax.yaxis)
        _latency_labels(ax, _panel_title(part.iloc[0], vary), "IOPS (median, log)")
    fig.suptitle(
        "Latency under load: IOPS against p99 (solid, ◆) and p50 (dashed, ●) latency, "
        "one line per target through its queue depths (qd)\n"
        "median of the repetitions; down and to the right is better; hollow = not valid",
        fontsize=12,
    )
    marks = [
        Line2D([], [], color="gray", ls="-", marker="D", label="p99"),
        Line2D([], [], color="gray", ls="--", marker="o", label="p50"),
        Line2D([], [], color="gray", ls="", marker="D", mfc="white", label="not valid (flagged short, cached, …)"),
    ]
    _legend(fig, lines, colours, "target", marks)
    return fig


# Where a percentile sits on the log-percentile axis: -log10(1 - p/100), so each nine takes the same room.
PERCENTILE_TICKS = [50.0, 90.0, 99.0, 99.9, 99.99]
DEPTH_STYLES = ["-", "--", ":", "-."]


def _log_ticks(*axes) -> None:
    """Plain numbers on a log axis: at 1, 2 and 5 of each decade, or, where the data span less than a decade, a
    few evenly spaced ones (matplotlib's own would crowd the axis with 10^x labels)."""
    for axis in axes:
        axis.axes.autoscale_view()
        low, high = axis.get_view_interval()
        narrow = low > 0 and high / low < 10
        axis.set_major_locator(MaxNLocator(4) if narrow else LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def _nines(p) -> np.ndarray:
    return -np.log10(1 - np.asarray(p, dtype=float) / 100)


def latency_percentiles(curves: pd.DataFrame) -> Figure | None:
    """Latency percentile curves (fsbench.analysis.percentiles): per op and test a panel, latency (log) against
    percentile on a log-percentile axis (p50 … p99.99, each nine the same width), one line per target and queue
    depth, from the histograms of all the cell's operations over its repetitions. Where no cell has the 2
    operations a p50 needs (one block per stream, one repeat), a figure that says so: the workflow expects the file."""
    if curves is None:
        return None
    if curves.empty:
        fig = plt.figure(figsize=(7, 1.5))
        fig.text(
            0.5,
            0.5,
            "No latency percentile curve: a p50 needs 2 operations in a cell (its repetitions pooled),\n"
            "and no cell made that many (e.g. one block per stream, one repetition)",
            ha="center",
            va="center",
        )
        return fig
    curves = with_iodepth(curves)
    several = [c for c in ("host", "array") if curves[c].nunique(dropna=False) > 1]
    names = [" ".join([*(str(r[c]) for c in several), str(r["target"])]) for _, r in curves.iterrows()]
    curves = curves.assign(line=names)
    lines, colours = _colours(curves["line"])
    depths = sorted(pd.to_numeric(curves["iodepth"]).unique())
    vary = varying(curves)
    fig, panels = _latency_panels(curves)
    for ax, part in panels:
        for line in lines:
            for k, depth in enumerate(depths):
                mine = part[(part["line"] == line) & (pd.to_numeric(part["iodepth"]) == depth)]
                if mine.empty:
                    continue
                mine = mine.sort_values("percentile")
                ax.plot(
                    _nines(mine["percentile"]),
                    mine["latency_us"],
                    ls=DEPTH_STYLES[k % len(DEPTH_STYLES)],
                    marker="o",
                    ms=3.5,
                    lw=1.6,
                    color=colours[line],
                )
        ax.set_yscale("log")
        _log_ticks(ax.yaxis)
        ax.set_xticks(_nines(PERCENTILE_TICKS), [f"p{p:g}" for p in PERCENTILE_TICKS])
        ax.set_xlim(_nines(45), _nines(99.995))
        _latency_labels(ax, _panel_title(part.iloc[0], vary), "percentile (log scale: each nine the same width)")
    fig.suptitle(
        "Latency percentiles: the distribution of every operation of each cell, its repetitions pooled\n"
        "a curve stops where the operations run out (p99.99 needs 10,000); lower is better",
        fontsize=12,
    )
    marks = [
        Line2D([], [], color="gray", ls=DEPTH_STYLES[k % len(DEPTH_STYLES)], label=f"qd{int(d)}")
        for k, d in enumerate(depths)
    ]
    _legend(fig, lines, colours, "target", marks if len(depths) > 1 else [])
    return fig
