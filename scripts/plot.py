"""The campaign's plots, PNG and SVG: throughput, efficiency vs raw, reported vs durable."""

from pathlib import Path

import pandas as pd

from fsbench.plots import plot_campaign
from fsbench.steplog import run_step


def plot(inp, outdir):
    paths = plot_campaign(pd.read_csv(inp.measurements), pd.read_csv(inp.summary), Path(outdir))
    return [str(p) for p in paths]


run_step(snakemake.log[0], plot, snakemake.input, Path(snakemake.output[0]).parent)
