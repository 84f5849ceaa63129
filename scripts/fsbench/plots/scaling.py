"""plots/scaling.png and .svg: a client-scaling study (scaling.csv) as cluster storage is reported: each test's
aggregate figure against the clients (hosts x processes per host), with its ideal line (the smallest point's
figure per client, times the clients) dashed in the same colour; a panel per unit (MB/s of the all-hosts cells,
io500's GiB/s and kIOPS)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a display

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter  # noqa: E402

from fsbench.analysis.scaling import ideal  # noqa: E402

DPI = 120


def plot_scaling(df: pd.DataFrame, outdir: Path) -> list[Path]:
    units = list(dict.fromkeys(df.unit)) or ["MB/s"]
    fig, axes = plt.subplots(1, len(units), figsize=(6.4 * len(units), 4.8), squeeze=False)
    clients = sorted(set(df.clients))
    for ax, unit in zip(axes[0], units, strict=True):
        part = df[df.unit == unit]
        for i, (test, rows) in enumerate(part.groupby("test", sort=False)):
            colour = f"C{i % 10}"
            # several points of one client count (4x1 and 2x2): each its own marker on the line's one x
            line = rows.groupby("clients", sort=True).figure.max()
            ax.plot(line.index, line.values, "o-", color=colour, label=test)
            if (rows.processes > 1).any():
                ax.plot(rows.clients, rows.figure, "o", color=colour, mfc="none")
            ax.plot(rows.clients, ideal(rows), "--", color=colour, alpha=0.6, lw=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(FixedLocator(clients))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("clients (hosts x processes per host)")
        ax.set_ylabel(f"aggregate {unit}")
        ax.grid(True, which="both", alpha=0.3)
        ax.plot([], [], "--", color="grey", label="ideal: the smallest point's figure per client x clients")
        if (part.processes > 1).any():
            ax.plot([], [], "o", color="grey", mfc="none", label="every point; the line joins the best of each x")
        ax.legend(fontsize="x-small", loc="best", framealpha=0.9)
    fig.suptitle("Client scaling: aggregate figure against clients, dashed the ideal line")
    fig.tight_layout()
    paths = []
    for ext in ("png", "svg"):
        path = Path(outdir) / f"scaling.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths
