"""Throughput with CIs (durable writes, reads), efficiency vs raw, and reported vs durable writes."""

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host


import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import (
    PercentFormatter,
)

from fsbench.analysis.names import UNDECIDED
from fsbench.analysis.stats import (
    TEST,
    label_of_test,
    summarize,
    varying,
)
from fsbench.analysis.validity import NOT_COMPARABLE, cell_reasons
from fsbench.plots.bars import (
    MAX_LABELLED_BARS,
    MBS,
    OPS,
    VERDICT_COLOURS,
    _axis_top,
    _bar,
    _bar_grid,
    _bar_panels,
    _bytes,
    _hue_title,
    _invalid_legend,
    _label,
    _legend,
    _mark,
    _rows_of,
    _value_below,
    _whisker,
    _with_hue,
)


def durable_view(measurements: pd.DataFrame) -> pd.DataFrame:
    """The rows as the throughput plot shows them: a write by its durable rate (flush included), where it has one."""
    if measurements.empty or "mb_s_durable" not in measurements:
        return measurements
    writes = (measurements["op"] == "write") & measurements["mb_s_durable"].notna()
    return measurements.assign(mb_s=measurements["mb_s"].where(~writes, measurements["mb_s_durable"]))


def _verdicts_vs_raw(comparisons: pd.DataFrame | None, vary) -> dict:
    """(campaign, host, array, target, op, hue) -> (ratio to raw, verdict), as comparisons.csv has them."""
    if comparisons is None or comparisons.empty:
        return {}
    found = comparisons[
        (comparisons["vs"] == "target") & (comparisons["b"] == "raw") & (comparisons["metric"] != "iops")
    ]
    return {
        (str(r["campaign"]), str(r["host"]), str(r["array"]), str(r["a"]), r["op"], label_of_test(r, vary)): (
            r["ratio"],
            r["verdict"],
        )
        for _, r in found.iterrows()
    }


def throughput(measurements: pd.DataFrame, summary: pd.DataFrame, comparisons: pd.DataFrame | None = None) -> Figure:
    """Durable writes and reads by target and block size, each filesystem's share of raw coloured by its verdict."""
    if len(measurements):
        measurements = durable_view(measurements)
        summary = summarize(measurements)
    verdicts = _verdicts_vs_raw(comparisons, varying(summary))
    vary = varying(summary)
    reps = _with_hue(measurements, vary) if not measurements.empty else measurements.assign(hue=[])
    labels, colours, summary, panels, n_targets, fig, axes = _bar_grid(summary, summary, 2)
    # One scale for every panel, so bars compare across them.
    ymax = _axis_top(
        np.concatenate([summary["mean"].to_numpy(float), reps["mb_s"].to_numpy(float) if len(reps) else []]),
        summary["ci95_high"].to_numpy(float),
    )
    # Values stand upright under a bar only where the widest fits across it.
    panel_inches = fig.get_size_inches()[0] / 2 - 0.9
    size = 10 if n_targets * len(labels) <= 8 else 9
    digits = max((len(f"{v:.0f}") for v in summary["mean"].dropna()), default=1)
    # Whiskers cut at the top have their end written above the axes: the titles make room for it.
    cut = bool((summary["ci95_high"] > ymax).any())
    any_invalid = False
    for row, name, part, targets, hues, at, width in _bar_panels(panels, labels):
        dots = _rows_of(reps, part)
        bar_inches = panel_inches / (len(targets) + 0.2) * width
        rotate = digits * 0.62 * size / 72 > bar_inches * 0.95
        for ax, op in zip(axes[row], OPS, strict=True):
            ax.set_ylim(0, ymax)
            cells = part[part["op"] == op]
            n_bars = len(cells)
            for _, c in cells.iterrows():
                x = at(targets.index(c["target"]), hues.index(c["hue"]))
                invalid = bool(cell_reasons(c.get("flags")))
                any_invalid |= invalid
                _bar(ax, x, c["mean"], width * 0.92, colours[c["hue"]], invalid)
                if pd.notna(c["ci95_low"]):
                    cut |= _whisker(ax, x, c["ci95_low"], c["ci95_high"], ymax)
                mine = dots[(dots["target"] == c["target"]) & (dots["op"] == op) & (dots["hue"] == c["hue"])]
                ys = mine["mb_s"].dropna().to_numpy()
                # Spread the dots a little across the bar so equal values stay visible.
                xs = x + np.linspace(-0.22, 0.22, len(ys)) * width if len(ys) > 1 else np.full(len(ys), x)
                ax.scatter(xs, ys, s=22, color="black", edgecolor="white", linewidth=0.6, zorder=3, clip_on=False)
                if n_bars <= MAX_LABELLED_BARS and pd.notna(c["mean"]):
                    _value_below(ax, x, f"{c['mean']:.0f}", size, rotate)
                where = (str(c["campaign"]), str(c["host"]), str(c["array"]), str(c["target"]), op, c["hue"])
                if where in verdicts and n_bars <= MAX_LABELLED_BARS:
                    ratio, said = verdicts[where]
                    # Above the bar and its dots (over its whisker, on white): clear of the cut whiskers' ends.
                    ax.annotate(
                        "n/c" if said == NOT_COMPARABLE else f"{ratio:.2f}×",
                        xy=(x, max([c["mean"], *ys])),
                        xytext=(0, 3),
                        textcoords="offset points",
                        ha="center",
                        va="bottom",
                        rotation=90 if rotate else 0,
                        fontsize=size - 1,
                        fontweight="bold" if said in ("faster", "slower") else "normal",
                        fontstyle="italic" if said == NOT_COMPARABLE else "normal",
                        color=VERDICT_COLOURS[said],
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                        zorder=5,
                    )
            ax.set_xticks(range(len(targets)), targets)
            # The target names below the row of values.
            ax.tick_params(axis="x", pad=10 + (digits * 0.62 * size if rotate else 1.25 * size))
            ax.set_xlim(-0.6, len(targets) - 0.4)
            ax.set_title(f"{name} — {'durable write' if op == 'write' else op}", pad=18 if cut else 6)
            ax.set_ylabel("MB/s" if op == "write" else "")
            ax.set_xlabel("")
            if cells.empty:
                ax.text(0.5, 0.5, f"no {op} measurements", transform=ax.transAxes, ha="center", color="gray")
    several = (summary["n"] > 1).any()
    moved = _bytes(measurements["bytes"]) if len(measurements) else "?"
    engines = ", ".join(map(str, pd.unique(measurements["engine"].dropna()))) if len(measurements) else "?"
    fig.suptitle(
        f"Durable writes (flush included) and cold reads: {moved} per measurement, engine {engines} · {MBS}\n"
        + (
            "bar = mean (value below it), whisker = 95% CI (geometric mean, log scale), dot = each repetition"
            if several
            else "one repetition, no CI (value below each bar)"
        ),
        fontsize=13,
    )
    marks = []
    if several:
        marks.append(_mark("a repetition", ls="none", marker="o", ms=6, mec="white"))
        marks.append(_mark("95% CI of the mean", lw=1.4, marker="_", ms=9, mew=1.4))
    if cut:
        marks.append(_mark("CI goes on past the axis (▲ end written above)", ls="none", marker="^", ms=7))
    if verdicts:
        marks += [
            Patch(color=VERDICT_COLOURS["slower"], label="0.5× = share of raw, clearly slower"),
            Patch(color=VERDICT_COLOURS["faster"], label="share of raw, clearly faster"),
            Patch(color=VERDICT_COLOURS[UNDECIDED], label="share of raw, no clear difference (comparisons.csv)"),
        ]
    if any_invalid:
        marks.append(_invalid_legend())
    _legend(fig, labels, colours, None, marks, prefix=_hue_title(summary) + " ")
    return fig


def efficiency(summary: pd.DataFrame) -> Figure | None:
    fs = summary[(summary["target"] != "raw") & summary["efficiency_vs_raw"].notna()]
    if fs.empty:
        return None
    labels, colours, fs, panels, n_targets, fig, axes = _bar_grid(fs, summary, 2)
    top = max(1.15, fs["efficiency_vs_raw"].max() * 1.12)
    # A share is not valid where the cell or raw's cell under it is not.
    where = ["campaign", "host", "array", "op", *TEST]
    raw = summary[summary["target"] == "raw"]
    raw_invalid = {tuple(map(str, r[where])) for _, r in raw.iterrows() if cell_reasons(r.get("flags"))}
    any_invalid = False
    for row, name, part, targets, hues, at, width in _bar_panels(panels, labels):
        for ax, op in zip(axes[row], OPS, strict=True):
            ax.set_ylim(0, top)
            ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2)
            ax.text(len(targets) - 0.45, 1.0, "raw", ha="right", va="bottom", fontsize=9)
            cells = part[part["op"] == op]
            for _, c in cells.iterrows():
                x = at(targets.index(c["target"]), hues.index(c["hue"]))
                invalid = bool(cell_reasons(c.get("flags"))) or tuple(map(str, c[where])) in raw_invalid
                any_invalid |= invalid
                _bar(ax, x, c["efficiency_vs_raw"], width * 0.92, colours[c["hue"]], invalid)
                if len(cells) <= MAX_LABELLED_BARS:
                    # Above a hatched bar, where white on its pale face would not read.
                    share = c["efficiency_vs_raw"]
                    _label(ax, x, share, f"{share:.0%}", len(cells), inside=not invalid)
            ax.set_xticks(range(len(targets)), targets)
            ax.set_xlim(-0.6, len(targets) - 0.4)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
            ax.set_title(f"{name} — {op}")
            ax.set_ylabel("median, as share of raw" if op == "write" else "")
    fig.suptitle(f"Filesystem efficiency: median throughput ÷ raw median (dashed line = raw)\n{MBS}", fontsize=13)
    _legend(
        fig,
        labels,
        colours,
        _hue_title(summary),
        [_invalid_legend("not valid: this cell or raw's (a repetition flagged short, cached, …)")]
        if any_invalid
        else [],
    )
    return fig


def durable(summary: pd.DataFrame) -> Figure | None:
    writes = summary[(summary["op"] == "write") & summary["median"].notna()]
    if writes.empty or writes["median_durable"].isna().all():
        return None
    labels, colours, writes, panels, n_targets, fig, axes = _bar_grid(writes, summary, 1, bars=2, least=14)
    top = writes[["median", "median_durable"]].max().max() * 1.12  # room for the labels above the bars
    # Per target and block size a pair: reported (solid) next to durable (hatched, lighter).
    for row, name, part, targets, hues, at, width in _bar_panels(panels, labels, bars_per_hue=2):
        ax = axes[row][0]
        ax.set_ylim(0, top)
        n_bars = 2 * len(part)
        for _, c in part.iterrows():
            j = 2 * hues.index(c["hue"])
            for k, value in enumerate([c["median"], c["median_durable"]]):
                if pd.isna(value):
                    continue
                x = at(targets.index(c["target"]), j + k)
                colour = colours[c["hue"]]
                ax.bar(
                    x,
                    value,
                    width * 0.92,
                    color=colour,
                    alpha=1 if k == 0 else 0.55,
                    hatch="" if k == 0 else "//",
                    edgecolor="white" if k == 0 else colour,
                )
                if n_bars <= 2 * MAX_LABELLED_BARS:
                    _label(ax, x, value, f"{value:.0f}", n_bars, inside=False)
        ax.set_xticks(range(len(targets)), targets)
        ax.set_xlim(-0.6, len(targets) - 0.4)
        ax.set_title(f"{name} — write")
        ax.set_ylabel("MB/s (median)")
    fig.suptitle(
        "Writes: the rate dd reports (solid) vs durable,\nincluding the flush to stable storage (hatched)\n"
        f"median of the repetitions · {MBS}",
        fontsize=13,
    )
    kinds = [
        Patch(facecolor="gray", label="reported by dd"),
        Patch(facecolor="gray", alpha=0.55, hatch="//", edgecolor="gray", label="durable (incl. flush)"),
    ]
    _legend(fig, labels, colours, None, kinds, prefix="bs=")
    return fig
