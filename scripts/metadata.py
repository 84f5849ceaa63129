"""metadata: create, stat, read and delete many small files on the cell's target, each phase timed."""

from fsbench.campaign.cells import CellSpec
from fsbench.measurement import steps
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

cell = CellSpec.from_params(snakemake.params.cell)
what = cell.describe("metadata")
record = run_device_step(
    snakemake.log[0], steps.metadata_step, cell, read_json(snakemake.input.setup), cell.workdir, what=what
)
write_json(snakemake.output[0], record)
