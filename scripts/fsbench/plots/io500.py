"""The bar chart of one target's IO500 phases (io500.csv's rows): the GiB/s phases and the kIOPS phases side by
side in io500's order, the unscored ones grey, an [INVALID] one hatched."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, as every plot of fsbench

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fsbench.io500 import phases as ph  # noqa: E402


def phase_chart(part: pd.DataFrame, title: str, path) -> Path:
    """`part`: one target's io500.csv rows. Writes `path` (PNG) and returns it."""
    rows = part[part["phase"].isin(ph.BY_NAME) & (part["phase"] != "timestamp")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for ax, unit in zip(axes, ("GiB/s", "kIOPS"), strict=True):
        mine = rows[rows["unit"] == unit].iloc[::-1]  # io500's order from the top
        colours = ["#4c72b0" if ph.BY_NAME[p].group else "#b0b0b0" for p in mine["phase"]]
        bars = ax.barh(mine["phase"], mine["value"].astype(float), color=colours)
        for bar, valid in zip(bars, mine["valid"], strict=True):
            if str(valid) != "True":
                bar.set_hatch("//")
        ax.set_xlabel(unit)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{title}: IO500 phases (grey: unscored; hatched: [INVALID])")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
