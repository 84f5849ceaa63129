"""mkfs: make the cell's filesystem on the array, or find it already made for this round."""

from pathlib import Path

from fsbench.plan import describe
from fsbench.records import read_json, write_json
from fsbench.step_report import run_step
from fsbench.steps import mkfs

p = snakemake.params
record = run_step(
    snakemake.log[0], mkfs, p.cell, read_json(snakemake.input.array), p.cell["workdir"], what=describe(p.cell, "mkfs")
)
write_json(snakemake.output.record, record)
Path(snakemake.output.ready).touch()
