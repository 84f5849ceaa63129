"""What every bar figure shares: style, a colour per test, a row of panels per place, where bars go, their
labels, whiskers and legends. Bars are placed by hand rather than by seaborn's barplot so that error bars (t-based,
from the summary) and repetition dots sit exactly on them."""

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host


import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fsbench.analysis.names import UNDECIDED, places
from fsbench.analysis.stats import (
    TEST,
    label_of_test,
    sort_rows,
    varying,
)
from fsbench.analysis.validity import NOT_COMPARABLE
from fsbench.toolkit.sizes import format_size

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


def _mark(label: str, **style) -> Line2D:
    """A legend entry for a black mark drawn in the panels."""
    return Line2D([], [], color="black", label=label, **style)
