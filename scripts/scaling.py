"""scaling.csv and plots/scaling.png/svg: a client-scaling study (config clients) from the all-hosts cells' records
and the io500 phases' records."""

from pathlib import Path

from fsbench.analysis.aggregate import measurements
from fsbench.analysis.scaling import table
from fsbench.plots.scaling import plot_scaling
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def scaling(records, io500_records, out):
    df = table(measurements(records), [read_json(r) for r in io500_records])
    df.to_csv(out.table, index=False)
    plot_scaling(df, Path(out.png).parent)
    return {"rows": len(df)}


run_step(
    snakemake.log[0],
    scaling,
    list(snakemake.input.records),
    list(snakemake.input.io500),
    snakemake.output,
)
