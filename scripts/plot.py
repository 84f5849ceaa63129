"""The campaign's plots, PNG and SVG: throughput, efficiency vs raw, reported vs durable, IOPS, latency under load,
latency percentiles, the metadata test, beside the baselines (fsbench.plots.campaign), and throughput over time
(fsbench.plots.timeseries)."""

from pathlib import Path

import pandas as pd

from fsbench.analysis.aggregate import record_paths
from fsbench.analysis.percentiles import percentile_curves
from fsbench.plots.campaign import plot_campaign
from fsbench.plots.timeseries import plot_timeseries
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def plot(inp, outdir, with_series):
    # baselines.csv is an input only when the config has baselines (rules/analysis.smk); otherwise an empty list.
    baselines = pd.concat([pd.read_csv(p) for p in inp.baselines], ignore_index=True) if inp.baselines else None
    verdicts = pd.read_csv(inp.comparisons)
    # The latency percentile curves come from the histograms the records keep (measurements.csv has 4 percentiles).
    curves = percentile_curves([read_json(p) for p in record_paths(list(inp.records))])
    measurements = pd.read_csv(inp.measurements)
    paths = plot_campaign(measurements, pd.read_csv(inp.summary), Path(outdir), baselines, verdicts, curves)
    if with_series:  # not for dd, which records no series (rules/common.smk)
        paths += plot_timeseries(pd.read_csv(inp.timeseries), Path(outdir), measurements)
    return [str(p) for p in paths]


with_series = any(Path(p).name == "timeseries.png" for p in snakemake.output)
run_step(snakemake.log[0], plot, snakemake.input, Path(snakemake.output[0]).parent, with_series)
