"""The campaign beside its baselines (earlier figures, docs/contract.md `baselines:`)."""

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host


import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fsbench.analysis.names import baseline_parts, several
from fsbench.analysis.stats import (
    TEST,
    label_of_test,
    sort_rows,
    varying,
)
from fsbench.plots.bars import (
    OPS,
    _with_hue,
)


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


def beside_baselines(summary: pd.DataFrame, earlier: pd.DataFrame) -> Figure:
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
