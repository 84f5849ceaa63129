"""The plots drawn (fsbench.plots.table's rows), each as PNG and SVG."""

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never a display, also under Snakemake on a headless host

import matplotlib.pyplot as plt
import pandas as pd

from fsbench.analysis.stats import is_metadata, summarize_baselines
from fsbench.plots import baselines, latency, metadata, throughput, timeseries
from fsbench.plots.bars import DPI, OPS, _style
from fsbench.plots.table import PLOTS

# The modules of the table's figure functions (module.function): the analysis digest reads these imports.
MODULES = {m.__name__.rsplit(".", 1)[1]: m for m in (baselines, latency, metadata, throughput, timeseries)}


@dataclass(frozen=True)
class Inputs:
    """What the figures are drawn from."""

    measurements: pd.DataFrame  # block I/O rows (not metadata)
    summary: pd.DataFrame  # block I/O cells
    meta: pd.DataFrame  # the metadata test's rows
    earlier: pd.DataFrame | None  # the baselines summarized, or None
    comparisons: pd.DataFrame | None  # comparisons.csv: the verdicts the plots colour, never made again here
    curves: pd.DataFrame | None  # fsbench.analysis.percentiles.percentile_curves of the records
    timeseries: pd.DataFrame | None  # timeseries.csv
    all_measurements: pd.DataFrame  # measurements.csv as it is


def inputs(measurements, summary, baselines=None, comparisons=None, curves=None, series=None) -> Inputs:
    earlier = summarize_baselines(baselines) if baselines is not None and len(baselines) else None
    meta = measurements[is_metadata(measurements)] if len(measurements) else measurements
    block = (
        measurements[measurements["op"].isin(OPS) & ~is_metadata(measurements)] if len(measurements) else measurements
    )
    summary = summary[summary["op"].isin(OPS) & ~is_metadata(summary)]
    return Inputs(block, summary, meta, earlier, comparisons, curves, series, measurements)


def figure(plot, data: Inputs):
    """The plot's figure, or None where there is nothing to draw."""
    needed = getattr(data, plot.needs) if plot.needs else True
    if needed is None or (isinstance(needed, pd.DataFrame) and needed.empty):
        return None
    module, function = plot.figure.split(".")
    return getattr(MODULES[module], function)(*(getattr(data, a) for a in plot.args))


def plot_campaign(
    measurements: pd.DataFrame,
    summary: pd.DataFrame,
    outdir,
    baselines=None,
    comparisons=None,
    curves=None,
    series=None,
    names=None,
) -> list[Path]:
    """Write the plots `names` (default: every row but timeseries, which needs `series`) whose data is there, as PNG
    and SVG; returns the files written."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    data = inputs(measurements, summary, baselines, comparisons, curves, series)
    if names is None:
        names = [n for n in PLOTS if n != "timeseries" or series is not None]
    paths = []
    for plot in (PLOTS[n] for n in names):
        with _style() if plot.styled else _plain():
            fig = figure(plot, data)
            if fig is None:
                continue
            for ext in ("png", "svg"):
                path = outdir / f"{plot.name}.{ext}"
                fig.savefig(path, dpi=DPI, bbox_inches="tight")  # never clip a long legend
                paths.append(path)
            plt.close(fig)
    return paths


def _plain():
    return plt.rc_context({})
