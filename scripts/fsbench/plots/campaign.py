"""The campaign's figures: throughput with CIs, efficiency vs raw, reported vs durable writes, IOPS, latency
under load, latency percentiles, the metadata test's files per second, and the campaign beside its baselines
(earlier figures, docs/contract.md `baselines:`).

Each figure is written as PNG and SVG. Bars are placed by hand rather than by seaborn's
barplot so that error bars (t-based, from the summary) and repetition dots sit exactly on them.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FuncFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
    PercentFormatter,
)

from fsbench.analysis.names import UNDECIDED, baseline_parts, places, several  # noqa: E402
from fsbench.analysis.stats import (  # noqa: E402
    PHASES,
    TEST,
    is_metadata,
    label_of_test,
    sort_rows,
    summarize,
    summarize_baselines,
    summarize_metadata,
    varying,
    with_iodepth,
)
from fsbench.analysis.validity import NOT_COMPARABLE, cell_reasons  # noqa: E402
from fsbench.toolkit.sizes import format_size  # noqa: E402

DPI = 110
OPS = ["write", "read"]
MBS = "MB/s = 10^6 B/s as dd prints"
# Above this many bars in a panel, value labels would overlap each other.
MAX_LABELLED_BARS = 24
# The y axis follows the bars and dots; whiskers reaching further than this times their top are cut at the
# top of the axis (and marked), rather than flattening every bar.
WHISKER_ROOM = 1.35


def _style():
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=1.05)}
    # No vertical grid lines: they would run through the bars.
    return plt.rc_context({**rc, "axes.titleweight": "bold", "axes.grid.axis": "y", "svg.fonttype": "none"})


def _bytes(values: pd.Series) -> str:
    """The amount moved per measurement, binary where exact (as configured), else decimal GB."""

    def text(b) -> str:
        size = format_size(int(b))
        return size if size[-3:] in ("MiB", "GiB", "TiB") else f"{b / 1e9:.3g} GB"

    found = sorted(pd.unique(values.dropna()))
    if len(found) > 3:  # e.g. a mix's read and write shares, or time-based runs: the range
        return f"{text(found[0])} to {text(found[-1])}"
    return ", ".join(map(text, found)) or "?"


def _panels(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One row of panels per campaign/host/array, in summary order; named by the array, with the campaign
    and the host where there are several."""
    return places(summary)


def _rows_of(frame: pd.DataFrame, part: pd.DataFrame) -> pd.DataFrame:
    """The rows of `frame` from the same campaign, host and array as the summary rows `part`."""
    mask = np.ones(len(frame), bool)
    for c in ("campaign", "host", "array"):
        if c in frame and c in part:
            mask &= (frame[c].astype(str) == str(part[c].iloc[0])).to_numpy()
    return frame[mask]


def _hues(summary: pd.DataFrame) -> tuple[list, dict]:
    """The hue label of each test (block size, plus whatever else varies) and a colour per label."""
    vary = varying(summary)
    tests = sort_rows(summary[TEST].drop_duplicates(), TEST)
    return _colours(label_of_test(r, vary) for _, r in tests.iterrows())


def _colours(names) -> tuple[list, dict]:
    """The distinct names in order of first appearance, and a colour per name."""
    names = list(dict.fromkeys(names))
    return names, dict(zip(names, sns.color_palette("colorblind", len(names)), strict=True))


def _hue_title(summary: pd.DataFrame) -> str:
    return ", ".join(["block size", *(("I/O" if c == "direct" else c) for c in varying(summary))])


def _with_hue(frame: pd.DataFrame, vary) -> pd.DataFrame:
    return frame.assign(hue=[label_of_test(r, vary) for _, r in frame.iterrows()])


def _positions(n_hues: int, group: float = 0.8):
    """Bar centre of (target i, hue j) and the bar width: hues side by side within each target."""
    width = group / n_hues
    return (lambda i, j: i + (j - (n_hues - 1) / 2) * width), width


def _label(ax, x, y, text, n_bars, inside=True):
    """A value on a bar: inside, half-way up, when the bar is tall enough (clear of whiskers and dots), else above."""
    size = 10 if n_bars <= 8 else 9
    ymax = ax.get_ylim()[1]
    if inside and y > 0.22 * ymax:
        ax.text(
            x,
            y * 0.5,
            text,
            ha="center",
            va="center",
            rotation=90 if n_bars > 8 else 0,
            color="white",
            fontsize=size,
            fontweight="bold",
        )
    else:
        ax.text(x, y + 0.01 * ymax, text, ha="center", va="bottom", rotation=90 if n_bars > 12 else 0, fontsize=size)


def _legend(fig, labels, colours, title, extra=(), prefix=""):
    handles = [Patch(facecolor=colours[h], label=f"{prefix}{h}") for h in labels] + list(extra)
    # Below the panels: above them it collides with the suptitle, inside them with the bars.
    fig.legend(handles=handles, title=title, loc="outside lower center", ncol=_columns(fig, handles), frameon=False)


def _columns(fig, handles, most=4) -> int:
    """As many legend columns (up to `most`) as fit the figure's width. Matplotlib fills them top to bottom;
    a column is as wide as its widest entry: its marker and spacing, about 1 in, and 0.085 in per character."""
    widths = [1.0 + 0.085 * len(h.get_label()) for h in handles]
    for ncol in range(min(most, len(handles)), 1, -1):
        rows = -(-len(handles) // ncol)
        if sum(max(widths[i : i + rows]) for i in range(0, len(handles), rows)) <= fig.get_size_inches()[0]:
            return ncol
    return 1


def _figure(n_rows: int, n_cols: int, n_targets: int, n_bars: int) -> tuple[Figure, np.ndarray]:
    # Wider with more bars, but capped so a many-filesystem campaign still fits a screen.
    width = n_cols * min(7.5 if n_cols > 1 else 12, max(4.2, 1.2 + 0.42 * n_bars + 0.3 * n_targets))
    fig = Figure(figsize=(width, 1.6 + 3.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    return fig, axes


def _targets(part: pd.DataFrame) -> list:
    return list(dict.fromkeys(part["target"]))


def _bar_panels(panels, labels, bars_per_hue: int = 1):
    """Per row of a bar grid: (row, name, its rows, its targets, its hues in legend order, and where its bars go:
    _positions for `bars_per_hue` bars per hue)."""
    for row, (name, part) in enumerate(panels):
        hues = [h for h in labels if h in set(part["hue"])]
        yield row, name, part, _targets(part), hues, *_positions(bars_per_hue * len(hues))


def _axis_top(bars_and_dots, whisker_ends) -> float:
    """The top of a throughput axis: set by the bars and dots (with room above them); the whiskers count only
    while they reach no further than WHISKER_ROOM times that. Longer whiskers are cut at the top (_whisker)."""
    data = np.nanmax(np.append(np.asarray(bars_and_dots, dtype=float), 0.0))
    reach = np.nanmax(np.append(np.asarray(whisker_ends, dtype=float), 0.0))
    top = max(data, reach) if reach <= data * WHISKER_ROOM else data
    return float(top * 1.08) if np.isfinite(top) and top > 0 else 1.0


def _whisker(ax, x, low, high, top) -> bool:
    """A 95% CI from `low` to `high` on bar `x`. An end beyond the axis (above `top`, below 0) is drawn to the
    axis edge and ends in an arrow head instead of a cap; above the top, the value it reaches is written over
    the arrow, outside the axes. Returns whether an end was cut."""
    y0, y1 = max(low, 0.0), min(high, top)
    ax.plot([x, x], [y0, y1], color="black", linewidth=1.4, zorder=2.5, solid_capstyle="butt")
    for y, cut, marker in ((y1, high > top, "^"), (y0, low < 0, "v")):
        if cut:
            ax.plot(x, y, marker=marker, markersize=7, color="black", clip_on=False, zorder=4)
        else:
            ax.plot(x, y, marker="_", markersize=9, markeredgewidth=1.4, color="black", zorder=2.5)
    if high > top:
        ax.annotate(
            f"{high:.0f}",
            xy=(x, top),
            xytext=(0, 5),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=7.5,
            color="#333333",
            annotation_clip=False,
        )
    return high > top or low < 0


def _value_below(ax, x, text, size, rotate) -> None:
    """A bar's value under the axis, beneath the bar: clear of the dots and whiskers drawn on the bar."""
    ax.annotate(
        text,
        xy=(x, 0),
        xycoords=ax.get_xaxis_transform(),
        xytext=(0, -7),
        textcoords="offset points",
        ha="center",
        va="top",
        rotation=90 if rotate else 0,
        fontsize=size,
    )


# A filesystem's share of raw, coloured by the verdict of comparisons.csv; one resting on a figure that is not valid
# is written grey and as "n/c", never coloured as a verdict.
VERDICT_COLOURS = {"slower": "#b2182b", "faster": "#2166ac", UNDECIDED: "#777777", NOT_COMPARABLE: "#999999"}
# A bar of a cell that is not valid (fsbench.analysis.validity): pale, hatched in its test's colour.
INVALID_FACE = "#f0f0f0"
INVALID_HATCH = "////"


def _bar(ax, x, height, width, colour, invalid: bool) -> None:
    """A bar in its test's colour; pale and hatched in that colour where the cell is not valid."""
    if invalid:
        ax.bar(x, height, width, facecolor=INVALID_FACE, edgecolor=colour, hatch=INVALID_HATCH, linewidth=1.2)
    else:
        ax.bar(x, height, width, color=colour)


def _invalid_legend(
    label="not valid (a repetition flagged short, cached, …): no verdict, n/c = not comparable",
) -> Patch:
    return Patch(facecolor=INVALID_FACE, edgecolor="#555555", hatch=INVALID_HATCH, label=label)


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


def _bar_grid(frame: pd.DataFrame, summary: pd.DataFrame, cols: int, bars: int = 1, least: int = 0):
    """A bar figure's layout: each test's label and colour (from the whole summary, so every figure agrees), the
    rows with their hue, the panels, the most targets a panel has, and the figure sized for `bars` per bar slot.
    """
    labels, colours = _hues(summary)
    frame = _with_hue(frame, varying(summary))
    panels = _panels(frame)
    n_targets = max(len(_targets(p)) for _, p in panels)
    fig, axes = _figure(len(panels), cols, n_targets, max(bars * n_targets * len(labels), least))
    return labels, colours, frame, panels, n_targets, fig, axes


def _throughput(measurements: pd.DataFrame, summary: pd.DataFrame, comparisons: pd.DataFrame | None = None) -> Figure:
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


def _mark(label: str, **style) -> Line2D:
    """A legend entry for a black mark drawn in the panels."""
    return Line2D([], [], color="black", label=label, **style)


def _efficiency(summary: pd.DataFrame) -> Figure | None:
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


def _durable(summary: pd.DataFrame) -> Figure | None:
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


def _shade(colour, j: int, n: int):
    """The j-th of n shades of `colour`: the full colour first, then lighter (blended towards white)."""
    mix = 0.0 if n <= 1 else 0.55 * j / (n - 1)
    return tuple(c + (1 - c) * mix for c in colour[:3])


def _sources(summary: pd.DataFrame, earlier: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(legend name, summary rows) per campaign (host) array, then per baseline (host, array), in their own
    order; a host is named where there are several."""
    sources = []
    several_campaigns = several(summary, "campaign")
    by = ["campaign", "host", "array"] if several(summary, "host") else ["campaign", "array"]
    for key, part in summary.groupby(by, sort=False, dropna=False):
        sources.append((" / ".join(map(str, key)) + ("" if several_campaigns else " (this campaign)"), part))
    sources += [(f"{name} (baseline)", part) for name, part in baseline_parts(earlier)]
    return sources


def _target_label(target) -> str:
    return "unnamed" if pd.isna(target) or str(target).strip() == "" else str(target)


def _beside_baselines(summary: pd.DataFrame, earlier: pd.DataFrame) -> Figure:
    """Write and read medians (dd-style mb_s) per target: each campaign array and each baseline, per block size.

    Colour = where a figure comes from (this campaign's array or a baseline), shade = block size.
    Write and read share one y axis, so every bar on the page compares with every other.
    """
    campaigns = ", ".join(map(str, pd.unique(summary["campaign"]))) or "?"
    names = ", ".join(map(str, pd.unique(earlier["campaign"])))
    several = earlier["campaign"].nunique() > 1
    summary = summary[summary["op"].isin(OPS) & summary["median"].notna()]
    earlier = earlier[earlier["op"].isin(OPS) & earlier["median"].notna()]
    both = pd.concat([summary, earlier], ignore_index=True)
    vary = varying(both) if len(both) else []
    sources = [(name, _with_hue(part, vary)) for name, part in _sources(summary, earlier)]
    palette = sns.color_palette("colorblind", max(len(sources), 1))
    targets = list(dict.fromkeys(_target_label(t) for t in sort_rows(both, ["target"])["target"])) if len(both) else []

    # Bars per (op, target), in legend order: each source's tests (block size ascending) in turn.
    legend, bars = [], {}
    for (name, part), colour in zip(sources, palette, strict=False):
        tests = sort_rows(part[TEST].drop_duplicates(), TEST)
        hues = list(dict.fromkeys(label_of_test(r, vary) for _, r in tests.iterrows()))
        for j, hue in enumerate(hues):
            shade = _shade(colour, j, len(hues))
            legend.append(Patch(facecolor=shade, label=f"{name}, {'bs ' if not vary else ''}{hue}"))
            for _, c in part[part["hue"] == hue].iterrows():
                bars.setdefault((c["op"], _target_label(c["target"])), []).append((c["median"], shade))
    per_group = max((len(b) for b in bars.values()), default=1)
    n_bars = max(sum(len(bars.get((op, t), [])) for t in targets) for op in OPS) if targets else 1

    width = min(14.0, max(7.0, 1.5 + 0.5 * n_bars + 0.3 * len(targets)))
    fig = Figure(figsize=(width, 9.2), layout="constrained")
    axes = fig.subplots(2, 1, sharey=True).ravel()
    top = both["median"].max() * 1.15 if len(both) else 1.0
    bar = 0.84 / per_group
    # Value labels stand upright only where the widest fits across a bar (axes are roughly the figure less 1.3 in).
    digits = max((len(f"{v:.0f}") for group in bars.values() for v, _ in group), default=1)
    bar_inches = (width - 1.3) / max(len(targets), 1) * bar
    rotate = digits * 0.62 * 10 / 72 > bar_inches * 0.95
    for ax, op in zip(axes, OPS, strict=True):
        ax.set_ylim(0, top if np.isfinite(top) and top > 0 else 1.0)
        for i, target in enumerate(targets):
            group = bars.get((op, target), [])
            for k, (value, shade) in enumerate(group):
                x = i + (k - (len(group) - 1) / 2) * bar
                ax.bar(x, value, bar * 0.92, color=shade, edgecolor="white", linewidth=0.5)
                ax.text(
                    x,
                    value + 0.012 * top,
                    f"{value:.0f}",
                    ha="center",
                    va="bottom",
                    rotation=90 if rotate else 0,
                    fontsize=9 if rotate else 10,
                )
        ax.set_xticks(range(len(targets)), targets)
        ax.set_xlim(-0.6, max(len(targets), 1) - 0.4)
        ax.tick_params(axis="y", labelleft=True)  # sharey hides it on the lower panel otherwise
        ax.set_ylabel("MB/s, median (dd-style)")
        ax.set_title(op, loc="left")
        if not any((op, t) in bars for t in targets):
            ax.text(0.5, 0.5, f"no {op} figures", transform=ax.transAxes, ha="center", color="gray")
    fig.suptitle(
        f"Campaign {campaigns} beside baseline{'s' if several else ''} {names}: "
        "median throughput per target\n"
        "all figures dd-style (mb_s: until the last write/read returned, flush not included) · "
        "MB/s = 10^6 B/s as dd prints",
        fontsize=13,
    )
    fig.legend(
        handles=legend,
        loc="outside lower center",
        ncol=2 if len(legend) > 1 else 1,
        frameon=False,
        title="where the figure comes from, block size",
    )
    return fig


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


def _iops(measurements: pd.DataFrame) -> Figure | None:
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


def _latency(measurements: pd.DataFrame) -> Figure | None:
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


def _latency_percentiles(curves: pd.DataFrame) -> Figure | None:
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


def _metadata(measurements: pd.DataFrame) -> Figure:
    """The metadata test: files per second of each phase by target, on a log axis (phases span decades: a stat
    from a warm dentry cache is ~100 times a durable create); one panel per array and stream count."""
    summary = summarize_metadata(measurements)
    summary["place"] = [name for name, part in places(summary) for _ in range(len(part))]
    panels = list(summary.groupby(["place", "streams"], sort=False))
    targets, colours = _colours(summary["target"])
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(max(7.0, 2.0 + 0.5 * len(targets) * 4), 4.4 * len(panels)),
        squeeze=False,
        layout="constrained",
    )
    at, width = _positions(len(targets))
    for ax, ((place, streams), part) in zip(axes[:, 0], panels, strict=True):
        bottom = part["median"].min() / 4
        for _, row in part.iterrows():
            x = at(PHASES.index(row["op"]), targets.index(row["target"]))
            ax.bar(x, row["median"], width * 0.92, color=colours[row["target"]])
            if pd.notna(row["ci95_low"]):
                ax.plot([x, x], [row["ci95_low"], row["ci95_high"]], color="black", linewidth=1.2)
            # The value inside the bar, from its foot: clear of the whisker and the dots above it.
            ax.text(
                x,
                bottom * 1.25,
                f"{row['median']:,.0f}",
                ha="center",
                va="bottom",
                fontsize=8,
                rotation=90,
                color="white",
                fontweight="bold",
            )
        mine = measurements[(measurements["array"] == part["array"].iloc[0]) & (measurements["streams"] == streams)]
        for _, row in mine.iterrows():  # each repetition
            x = at(PHASES.index(row["op"]), targets.index(row["target"]))
            ax.scatter(x, row["iops"], s=14, color="black", edgecolor="white", linewidth=0.5, zorder=3)
        ax.set_yscale("log")
        ax.set_xticks(range(len(PHASES)), PHASES)
        ax.set_ylim(bottom, part["median"].max() * 8)
        ax.set_ylabel("files per second (log)")
        ax.set_title(f"{place} — {streams} stream{'s' if streams != 1 else ''}")
    first = summary.iloc[0]
    fig.suptitle(
        f"Metadata: {int(first['files'])} files of {format_size(int(first['file_size']))} per stream in "
        f"{int(first['dirs'])} dirs\nbar = median files/s of the repetitions (value in it), whisker = 95% CI, "
        "dot = each repetition",
        fontsize=12,
    )
    _legend(fig, targets, colours, "target")
    return fig


def plot_campaign(
    measurements: pd.DataFrame, summary: pd.DataFrame, outdir, baselines=None, comparisons=None, curves=None
) -> list[Path]:
    """Write throughput, efficiency (when there is raw) and durable (when there are writes) as PNG and SVG.
    The verdicts they colour are those aggregate wrote to comparisons.csv (`comparisons`), never made again here.

    With `baselines` (the rows of baselines.csv, non-empty) also `baselines`: the campaign beside them. With
    `curves` (fsbench.analysis.percentiles.percentile_curves of the records) also `latency_percentiles`.
    """
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    earlier = summarize_baselines(baselines) if baselines is not None and len(baselines) else None
    meta = measurements[is_metadata(measurements)] if len(measurements) else measurements
    summary = summary[summary["op"].isin(OPS) & ~is_metadata(summary)]
    measurements = (
        measurements[measurements["op"].isin(OPS) & ~is_metadata(measurements)] if len(measurements) else measurements
    )
    figures = []
    if not summary.empty:
        figures += [
            ("throughput", lambda: _throughput(measurements, summary, comparisons)),
            ("efficiency", lambda: _efficiency(summary)),
            ("durable", lambda: _durable(summary)),
        ]
    if len(measurements):
        figures += [("iops", lambda: _iops(measurements)), ("latency", lambda: _latency(measurements))]
        figures.append(("latency_percentiles", lambda: _latency_percentiles(curves)))
    if len(meta):
        figures.append(("metadata", lambda: _metadata(meta)))
    if earlier is not None:  # always written when there are baselines: the workflow expects the file
        figures.append(("baselines", lambda: _beside_baselines(summary, earlier)))
    paths = []
    with _style():
        for name, make in figures:
            fig = make()
            if fig is None:
                continue
            for ext in ("png", "svg"):
                path = outdir / f"{name}.{ext}"
                fig.savefig(path, dpi=DPI, bbox_inches="tight")  # never clip a long legend
                paths.append(path)
    return paths
