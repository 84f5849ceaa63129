"""Measure one cell and repeat: set the array up as the cell needs it, write, make the cache cold, read."""

from fsbench.records import write_json
from fsbench.steplog import run_step
from fsbench.steps import measure_cell

records = run_step(snakemake.log[0], measure_cell, snakemake.params.cell, snakemake.params.workdir)
write_json(snakemake.output.write, records["write"])
write_json(snakemake.output.read, records["read"])
