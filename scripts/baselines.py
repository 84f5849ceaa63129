"""baselines.csv: earlier figures (pasted dd logs, older measurements.csv) in the campaign's columns."""

import pandas as pd

from fsbench.analysis.baselines import load_baseline
from fsbench.measurement.rows import COLUMNS
from fsbench.toolkit.run_step import run_step


def collect(baselines: dict, out: str) -> dict:
    frames = [load_baseline(name, path) for name, path in baselines.items()]
    df = pd.concat([f[COLUMNS] for f in frames], ignore_index=True)
    df.to_csv(out, index=False)
    return {name: len(f) for name, f in zip(baselines, frames, strict=True)}


run_step(snakemake.log[0], collect, snakemake.params.baselines, snakemake.output[0])
