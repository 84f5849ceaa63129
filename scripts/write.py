"""write: write the cell's data and flush it, timed; on every host at once for an all-hosts cell."""

from pathlib import Path

from fsbench.campaign.cells import CellSpec, is_all_hosts
from fsbench.measurement import all_hosts, steps
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

p, out = snakemake.params, snakemake.output
cell = CellSpec.from_params(p.cell)
what = cell.describe("write")
if is_all_hosts(cell.host):
    parts = Path(out.record).parent / "hosts"  # each host's own records, beside the cell's
    record = run_device_step(snakemake.log[0], all_hosts.measure, cell, "write", p.hosts, p.scratch, parts, what=what)
else:
    before = read_json(snakemake.input.setup)
    record = run_device_step(snakemake.log[0], steps.write, cell, before, cell.workdir, what=what)
write_json(out.record, record)
Path(out.ready).touch()
