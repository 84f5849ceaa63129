"""mkfs: make the cell's filesystem on the array, or find it already made for this round."""

from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.measurement.steps import mkfs
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

cell = CellSpec.from_params(snakemake.params.cell)
record = run_device_step(
    snakemake.log[0], mkfs, cell, read_json(snakemake.input.array), cell.workdir, what=cell.describe("mkfs")
)
write_json(snakemake.output.record, record)
Path(snakemake.output.ready).touch()
