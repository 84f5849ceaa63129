"""Measure one write: the cell's data onto the device or filesystem, flush included."""

from fsbench.records import read_json, write_json
from fsbench.steplog import run_step
from fsbench.steps import measure_write

p = snakemake.params
state = read_json(snakemake.input[0])
write_json(snakemake.output[0], run_step(snakemake.log[0], measure_write, state, p.cell, p.workdir))
