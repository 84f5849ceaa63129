"""mount: mount the filesystem mkfs made, or find it mounted as asked."""

from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.measurement.steps import mount
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

cell = CellSpec.from_params(snakemake.params.cell)
record = run_device_step(
    snakemake.log[0], mount, cell, read_json(snakemake.input.mkfs), cell.workdir, what=cell.describe("mount")
)
write_json(snakemake.output.record, record)
Path(snakemake.output.ready).touch()
