"""Measure one read: what the write made, from a cache emptied and measured."""

from fsbench.records import read_json, write_json
from fsbench.steplog import run_step
from fsbench.steps import measure_read

p = snakemake.params
written = read_json(snakemake.input[0])
write_json(snakemake.output[0], run_step(snakemake.log[0], measure_read, written, p.cell, p.workdir))
