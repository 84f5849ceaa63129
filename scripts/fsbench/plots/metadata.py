"""The metadata test's files per second, per phase and target."""

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host


import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from fsbench.analysis.names import places
from fsbench.analysis.stats import (
    summarize_metadata,
)
from fsbench.engines.metadata import METADATA_PHASES
from fsbench.plots.bars import (
    _colours,
    _legend,
    _positions,
)
from fsbench.toolkit.sizes import format_size


def metadata(measurements: pd.DataFrame) -> Figure:
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
            x = at(METADATA_PHASES.index(row["op"]), targets.index(row["target"]))
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
            x = at(METADATA_PHASES.index(row["op"]), targets.index(row["target"]))
            ax.scatter(x, row["iops"], s=14, color="black", edgecolor="white", linewidth=0.5, zorder=3)
        ax.set_yscale("log")
        ax.set_xticks(range(len(METADATA_PHASES)), METADATA_PHASES)
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
