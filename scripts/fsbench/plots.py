"""The campaign's figures: throughput with CIs, efficiency vs raw, reported vs durable writes.

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
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import PercentFormatter  # noqa: E402

from .sizes import format_size  # noqa: E402
from .stats import TEST, sort_rows, test_label, varying  # noqa: E402

DPI = 110
OPS = ["write", "read"]
MBS = "MB/s = 10^6 B/s as dd prints"
# Above this many bars in a panel, value labels would overlap each other.
MAX_LABELLED_BARS = 24


def _style():
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("notebook", font_scale=1.05)}
    # No vertical grid lines: they would run through the bars.
    return plt.rc_context({**rc, "axes.titleweight": "bold", "axes.grid.axis": "y", "svg.fonttype": "none"})


def _bytes(values: pd.Series) -> str:
    """The amount moved per measurement, binary where exact (as configured), else decimal GB."""
    shown = []
    for b in pd.unique(values.dropna()):
        text = format_size(int(b))
        shown.append(text if text.endswith("iB") else f"{b / 1e9:.3g} GB")
    return ", ".join(shown) or "?"


def _panels(summary: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """One row of panels per campaign/array, in summary order."""
    several = summary["campaign"].nunique(dropna=False) > 1
    return [
        (f"{campaign} / {array}" if several else str(array), part)
        for (campaign, array), part in summary.groupby(["campaign", "array"], sort=False, dropna=False)
    ]


def _hues(summary: pd.DataFrame) -> tuple[list, dict]:
    """The hue label of each test (block size, plus whatever else varies) and a colour per label."""
    vary = varying(summary)
    tests = sort_rows(summary[TEST].drop_duplicates(), TEST)
    labels = list(dict.fromkeys(test_label(r, vary) for _, r in tests.iterrows()))
    return labels, dict(zip(labels, sns.color_palette("colorblind", len(labels)), strict=True))


def _hue_title(summary: pd.DataFrame) -> str:
    return ", ".join(["block size", *(("I/O" if c == "direct" else c) for c in varying(summary))])


def _with_hue(frame: pd.DataFrame, vary) -> pd.DataFrame:
    return frame.assign(hue=[test_label(r, vary) for _, r in frame.iterrows()])


def _positions(n_hues: int, group: float = 0.8):
    """Bar centre of (target i, hue j) and the bar width: hues side by side within each target."""
    width = group / n_hues
    return (lambda i, j: i + (j - (n_hues - 1) / 2) * width), width


def _label(ax, x, y, text, n_bars, inside=True):
    """A value on a bar: inside, half-way up, when the bar is tall enough (clear of whiskers and dots), else above."""
    size = 10 if n_bars <= 8 else 9
    ymax = ax.get_ylim()[1]
    if inside and y > 0.22 * ymax:
        ax.text(x, y * 0.5, text, ha="center", va="center", rotation=90 if n_bars > 8 else 0,
                color="white", fontsize=size, fontweight="bold")  # fmt: skip
    else:
        ax.text(x, y + 0.01 * ymax, text, ha="center", va="bottom", rotation=90 if n_bars > 12 else 0, fontsize=size)


def _legend(fig, labels, colours, title, extra=(), prefix=""):
    handles = [Patch(facecolor=colours[h], label=prefix + h) for h in labels] + list(extra)
    # Below the panels: above them it collides with the suptitle, inside them with the bars.
    fig.legend(handles=handles, title=title, loc="outside lower center", ncol=min(len(handles), 4), frameon=False)


def _figure(n_rows: int, n_cols: int, n_targets: int, n_bars: int) -> tuple[Figure, np.ndarray]:
    # Wider with more bars, but capped so a many-filesystem campaign still fits a screen.
    width = n_cols * min(7.5 if n_cols > 1 else 12, max(4.2, 1.2 + 0.42 * n_bars + 0.3 * n_targets))
    fig = Figure(figsize=(width, 1.6 + 3.6 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    return fig, axes


def _targets(part: pd.DataFrame) -> list:
    return list(dict.fromkeys(part["target"]))


def _throughput(measurements: pd.DataFrame, summary: pd.DataFrame) -> Figure:
    labels, colours = _hues(summary)
    vary = varying(summary)
    summary = _with_hue(summary, vary)
    reps = _with_hue(measurements, vary) if not measurements.empty else measurements.assign(hue=[])
    panels = _panels(summary)
    n_targets = max(len(_targets(p)) for _, p in panels)
    fig, axes = _figure(len(panels), 2, n_targets, n_targets * len(labels))
    ymax = max(summary[["mean", "ci95_high"]].max().max(), reps["mb_s"].max() if len(reps) else 0) * 1.08
    for row, (name, part) in enumerate(panels):
        targets = _targets(part)
        hues = [h for h in labels if h in set(part["hue"])]
        at, width = _positions(len(hues))
        campaign, array = part["campaign"].iloc[0], part["array"].iloc[0]
        dots = reps[(reps["campaign"] == campaign) & (reps["array"] == array)]
        for ax, op in zip(axes[row], OPS, strict=True):
            ax.set_ylim(0, ymax if np.isfinite(ymax) and ymax > 0 else 1)
            cells = part[part["op"] == op]
            n_bars = len(cells)
            for _, c in cells.iterrows():
                x = at(targets.index(c["target"]), hues.index(c["hue"]))
                ax.bar(x, c["mean"], width * 0.92, color=colours[c["hue"]])
                if pd.notna(c["ci95_low"]):
                    err = [[c["mean"] - c["ci95_low"]], [c["ci95_high"] - c["mean"]]]
                    ax.errorbar(x, c["mean"], yerr=err, fmt="none", ecolor="black", elinewidth=1.4, capsize=4)
                mine = dots[(dots["target"] == c["target"]) & (dots["op"] == op) & (dots["hue"] == c["hue"])]
                ys = mine["mb_s"].dropna().to_numpy()
                # Spread the dots a little across the bar so equal values stay visible.
                xs = x + np.linspace(-0.22, 0.22, len(ys)) * width if len(ys) > 1 else np.full(len(ys), x)
                ax.scatter(xs, ys, s=22, color="black", edgecolor="white", linewidth=0.6, zorder=3)
                if n_bars <= MAX_LABELLED_BARS and pd.notna(c["mean"]):
                    _label(ax, x, c["mean"], f"{c['mean']:.0f}", n_bars)
            ax.set_xticks(range(len(targets)), targets)
            ax.set_xlim(-0.6, len(targets) - 0.4)
            ax.set_title(f"{name} — {op}")
            ax.set_ylabel("MB/s" if op == "write" else "")
            ax.set_xlabel("")
            if cells.empty:
                ax.text(0.5, 0.5, f"no {op} measurements", transform=ax.transAxes, ha="center", color="gray")
    several = (summary["n"] > 1).any()
    moved = _bytes(measurements["bytes"]) if len(measurements) else "?"
    engines = ", ".join(map(str, pd.unique(measurements["engine"].dropna()))) if len(measurements) else "?"
    fig.suptitle(
        f"Throughput: {moved} per measurement, engine {engines}\n"
        + ("bar = mean, whisker = 95% CI (Student t), dot = each repetition" if several else "one repetition, no CI")
        + f" · {MBS}",
        fontsize=13,
    )
    _legend(fig, labels, colours, _hue_title(summary))
    return fig


def _efficiency(summary: pd.DataFrame) -> Figure | None:
    fs = summary[(summary["target"] != "raw") & summary["efficiency_vs_raw"].notna()]
    if fs.empty:
        return None
    labels, colours = _hues(summary)
    fs = _with_hue(fs, varying(summary))
    panels = _panels(fs)
    n_targets = max(len(_targets(p)) for _, p in panels)
    fig, axes = _figure(len(panels), 2, n_targets, n_targets * len(labels))
    top = max(1.15, fs["efficiency_vs_raw"].max() * 1.12)
    for row, (name, part) in enumerate(panels):
        targets = _targets(part)
        hues = [h for h in labels if h in set(part["hue"])]
        at, width = _positions(len(hues))
        for ax, op in zip(axes[row], OPS, strict=True):
            ax.set_ylim(0, top)
            ax.axhline(1.0, color="black", linestyle="--", linewidth=1.2)
            ax.text(len(targets) - 0.45, 1.0, "raw", ha="right", va="bottom", fontsize=9)
            cells = part[part["op"] == op]
            for _, c in cells.iterrows():
                x = at(targets.index(c["target"]), hues.index(c["hue"]))
                ax.bar(x, c["efficiency_vs_raw"], width * 0.92, color=colours[c["hue"]])
                if len(cells) <= MAX_LABELLED_BARS:
                    _label(ax, x, c["efficiency_vs_raw"], f"{c['efficiency_vs_raw']:.0%}", len(cells))
            ax.set_xticks(range(len(targets)), targets)
            ax.set_xlim(-0.6, len(targets) - 0.4)
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
            ax.set_title(f"{name} — {op}")
            ax.set_ylabel("median, as share of raw" if op == "write" else "")
    fig.suptitle(f"Filesystem efficiency: median throughput ÷ raw median (dashed line = raw)\n{MBS}", fontsize=13)
    _legend(fig, labels, colours, _hue_title(summary))
    return fig


def _durable(summary: pd.DataFrame) -> Figure | None:
    writes = summary[(summary["op"] == "write") & summary["median"].notna()]
    if writes.empty or writes["median_durable"].isna().all():
        return None
    labels, colours = _hues(summary)
    writes = _with_hue(writes, varying(summary))
    panels = _panels(writes)
    n_targets = max(len(_targets(p)) for _, p in panels)
    fig, axes = _figure(len(panels), 1, n_targets, max(2 * n_targets * len(labels), 14))
    top = writes[["median", "median_durable"]].max().max() * 1.12  # room for the labels above the bars
    for row, (name, part) in enumerate(panels):
        ax = axes[row][0]
        ax.set_ylim(0, top)
        targets = _targets(part)
        hues = [h for h in labels if h in set(part["hue"])]
        # Per target and block size a pair: reported (solid) next to durable (hatched, lighter).
        at, width = _positions(2 * len(hues))
        n_bars = 2 * len(part)
        for _, c in part.iterrows():
            j = 2 * hues.index(c["hue"])
            for k, value in enumerate([c["median"], c["median_durable"]]):
                if pd.isna(value):
                    continue
                x = at(targets.index(c["target"]), j + k)
                colour = colours[c["hue"]]
                ax.bar(x, value, width * 0.92, color=colour, alpha=1 if k == 0 else 0.55,
                       hatch="" if k == 0 else "//", edgecolor="white" if k == 0 else colour)  # fmt: skip
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


def plot_campaign(measurements: pd.DataFrame, summary: pd.DataFrame, outdir) -> list[Path]:
    """Write throughput, efficiency (when there is raw) and durable (when there are writes) as PNG and SVG."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    if summary.empty:
        return []
    summary = summary[summary["op"].isin(OPS)]
    measurements = measurements[measurements["op"].isin(OPS)] if len(measurements) else measurements
    if summary.empty:
        return []
    paths = []
    with _style():
        for name, make in [
            ("throughput", lambda: _throughput(measurements, summary)),
            ("efficiency", lambda: _efficiency(summary)),
            ("durable", lambda: _durable(summary)),
        ]:
            fig = make()
            if fig is None:
                continue
            for ext in ("png", "svg"):
                path = outdir / f"{name}.{ext}"
                fig.savefig(path, dpi=DPI, bbox_inches="tight")  # never clip a long legend
                paths.append(path)
    return paths
