"""The bar chart of one target's IO500 phases (io500.csv's rows): the GiB/s phases and the kIOPS phases side by
side in io500's order, the unscored ones grey, an [INVALID] one hatched; and where the history store holds an
earlier run of the same campaign, that run's figure of each phase as an outlined bar beside it."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, as every plot of fsbench

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fsbench.io500 import phases as ph  # noqa: E402


def phase_chart(part: pd.DataFrame, title: str, path, previous: tuple[str, dict] | None = None) -> Path:
    """`part`: one target's io500.csv rows; `previous`: (when the earlier run started, {phase: its figure}).
    Writes `path` (PNG) and returns it."""
    rows = part[part["phase"].isin(ph.BY_NAME) & (part["phase"] != "timestamp")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6 if previous else 4.2), layout="constrained")
    height = 0.4 if previous else 0.8
    shift = height / 2 if previous else 0.0  # this run's bars above the previous run's
    for ax, unit in zip(axes, ("GiB/s", "kIOPS"), strict=True):
        mine = rows[rows["unit"] == unit].iloc[::-1]  # io500's order from the top
        at = np.arange(len(mine))
        colours = ["#4c72b0" if ph.BY_NAME[p].group else "#b0b0b0" for p in mine["phase"]]
        bars = ax.barh(at + shift, mine["value"].astype(float), height, color=colours, label="this run")
        for bar, valid in zip(bars, mine["valid"], strict=True):
            if str(valid) != "True":
                bar.set_hatch("//")
        if previous:
            before = [previous[1].get(p, np.nan) for p in mine["phase"]]
            ax.barh(at - shift, before, height, fill=False, edgecolor=colours, label="previous run")
        ax.set_yticks(at, mine["phase"])
        ax.set_xlabel(unit)
        ax.grid(axis="x", alpha=0.3)
    if previous:
        axes[1].legend(loc="lower right", fontsize="small")
    heading = f"{title}: IO500 phases (grey: unscored; hatched: [INVALID])"
    if previous:
        heading += f"\noutlined: the previous run of this campaign in the history store ({previous[0][:19]} UTC)"
    fig.suptitle(heading)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
