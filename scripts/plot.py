"""The campaign's plots, PNG and SVG: the rows of fsbench.plots.table that the rule's outputs name (rules/common.smk
lists them from the same table), drawn by fsbench.plots.draw."""

from pathlib import Path

import pandas as pd

from fsbench.analysis.aggregate import record_paths
from fsbench.analysis.percentiles import percentile_curves
from fsbench.plots.draw import plot_campaign
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def plot(inp, outputs):
    # baselines.csv is an input only when the config has baselines (rules/analysis.smk); otherwise an empty list.
    baselines = pd.concat([pd.read_csv(p) for p in inp.baselines], ignore_index=True) if inp.baselines else None
    # The latency percentile curves come from the histograms the records keep (measurements.csv has 4 percentiles).
    curves = percentile_curves([read_json(p) for p in record_paths(list(inp.records))])
    names = [Path(p).stem for p in outputs if p.endswith(".png")]
    paths = plot_campaign(
        pd.read_csv(inp.measurements),
        pd.read_csv(inp.summary),
        Path(outputs[0]).parent,
        baselines,
        pd.read_csv(inp.comparisons),
        curves,
        pd.read_csv(inp.timeseries),
        names,
    )
    return [str(p) for p in paths]


run_step(snakemake.log[0], plot, snakemake.input, list(snakemake.output))
