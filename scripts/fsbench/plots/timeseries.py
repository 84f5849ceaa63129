"""plots/timeseries.png: throughput over time from timeseries.csv (fsbench.analysis.timeseries_table), a panel
per array, test and op."""

import matplotlib

matplotlib.use("Agg")  # files only, also on a headless host

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fsbench.analysis.stats import label_of_test, sort_rows, varying
from fsbench.measurement.rows import TEST
from fsbench.toolkit import flags

# One measurement, in the time series and in measurements.csv.
MEASUREMENT = ("host", "array", "target", "op", *TEST, "rep")


def _flagged(measurements: pd.DataFrame | None) -> set:
    """(host, array, target, op, test columns, rep) of measurements flagged drop or not-steady."""
    if measurements is None or measurements.empty:
        return set()
    keys = list(MEASUREMENT)
    hit = measurements[measurements["flags"].map(lambda f: bool({flags.DROP, flags.NOT_STEADY} & set(flags.parse(f))))]
    return {tuple(str(v) for v in r) for r in hit[keys].itertuples(index=False)}


def _steps(one: pd.DataFrame) -> tuple[list, list]:
    """One measurement's series as steps from its start: each rate held over its interval. A last interval much
    shorter than the others (where the measurement ended) is left out: a block or two over a few ms reads as a
    spike that no interval of the run had."""
    if len(one) > 1 and one["interval_s"].iloc[-1] < 0.5 * one["interval_s"].iloc[:-1].median():
        one = one.iloc[:-1]
    start = one["t_s"].iloc[0] - one["interval_s"].iloc[0]
    return [start, *one["t_s"]], [one["mb_s"].iloc[0], *one["mb_s"]]


def timeseries_figure(table: pd.DataFrame, measurements: pd.DataFrame | None = None):
    """Throughput over time: a row of panels per array and test, a column per op, a colour per target, a line per
    repeat (each panel its own scales: a 4 KiB test and a 4 MiB one differ tenfold); the lines of measurements
    flagged drop or not-steady dashed. None when no measurement has a series."""
    if table.empty:
        return None
    table = table[~table["host"].astype(str).str.endswith("@all")]  # the hosts of an all-hosts cell: its own rows
    vary = varying(table)
    table = table.assign(test=[label_of_test(r, vary) for _, r in table.iterrows()])
    several = table["host"].nunique() > 1  # then a colour per target and host
    table = table.assign(line=table["target"].astype(str) + (" on " + table["host"].astype(str) if several else ""))
    order = sort_rows(table.drop_duplicates(["array", "block_size", *vary]), ["array", "block_size", *vary])
    rows = list(dict.fromkeys(zip(order["array"], order["test"], strict=True)))
    ops = [op for op in ("write", "read") if op in set(table["op"])] + sorted(set(table["op"]) - {"write", "read"})
    targets = list(dict.fromkeys(sort_rows(table, ["target", "host"])["line"]))
    colours = dict(zip(targets, sns.color_palette("colorblind", len(targets)), strict=False))
    flagged = _flagged(measurements)
    keys = MEASUREMENT
    with plt.rc_context({**sns.axes_style("whitegrid"), "svg.fonttype": "none"}):
        fig, axes = plt.subplots(len(rows), len(ops), figsize=(6.0 * len(ops), 2.5 * len(rows) + 0.8), squeeze=False)
        for i, (array, test) in enumerate(rows):
            for j, op in enumerate(ops):
                ax = axes[i, j]
                part = table[(table["array"] == array) & (table["test"] == test) & (table["op"] == op)]
                for (line, _rep, _host), one in part.groupby(["line", "rep", "host"], sort=False):
                    r = one.iloc[0]
                    dashed = tuple(str(r[k]) for k in keys) in flagged
                    t, rate = _steps(one)
                    ax.plot(
                        t,
                        rate,
                        color=colours[line],
                        lw=1.2,
                        alpha=0.85,
                        ls="--" if dashed else "-",
                        drawstyle="steps-pre",  # each value holds over its interval, which ends at t_s
                    )
                ax.set_title(f"{array} · {test} · {op}", fontsize=10, fontweight="bold")
                ax.set_xlim(left=0)
                ax.set_ylim(bottom=0)
                ax.set_ylabel("MB/s" if j == 0 else "")
                if i == len(rows) - 1:
                    ax.set_xlabel("seconds into the measurement")
        handles = [plt.Line2D([], [], color=colours[t], lw=2, label=str(t)) for t in targets]
        if flagged:
            handles.append(plt.Line2D([], [], color="#555555", ls="--", label="flagged drop or not-steady"))
        fig.legend(handles=handles, loc="lower center", ncols=min(5, len(handles)), frameon=False)
        fig.suptitle("Throughput over time, per interval (a line per repeat)", fontweight="bold")
        fig.tight_layout(rect=(0, 0.45 / (2.5 * len(rows) + 0.8), 1, 1 - 0.3 / (2.5 * len(rows) + 0.8)))
    return fig


def timeseries_plot(table: pd.DataFrame, measurements: pd.DataFrame | None = None):
    """plots/timeseries: the figure, or one that says so where no measurement has a series (dd)."""
    fig = timeseries_figure(table, measurements)
    if fig is None:
        fig = plt.figure(figsize=(6, 1.5))
        fig.text(0.5, 0.5, "No time series: the engine (dd) reports none", ha="center", va="center")
    return fig
