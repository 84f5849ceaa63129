"""read: make the cache cold, prove it, and read back what the write made; on every host at once for an
all-hosts cell."""

from pathlib import Path

from fsbench.campaign.cells import CellSpec, is_all_hosts
from fsbench.measurement import all_hosts, steps
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

p = snakemake.params
cell = CellSpec.from_params(p.cell)
what = cell.describe("read")
if is_all_hosts(cell.host):
    parts = Path(snakemake.output[0]).parent / "hosts"
    record = run_device_step(snakemake.log[0], all_hosts.measure, cell, "read", p.hosts, p.scratch, parts, what=what)
else:
    before = read_json(snakemake.input.write)
    record = run_device_step(snakemake.log[0], steps.read, cell, before, cell.workdir, what=what)
write_json(snakemake.output[0], record)
