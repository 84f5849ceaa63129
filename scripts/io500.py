"""One IO500 phase (params.phase) of a target, every host of the cell at once."""

from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.io500.launch import phase_step
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_step

p, out = snakemake.params, snakemake.output
cell = CellSpec.from_params(p.cell)
parts = Path(out.record).parent / "hosts"  # each host's own record, beside the phase's
before = read_json(snakemake.input.before)
what = cell.describe(f"io500 {p.phase}")
record = run_step(snakemake.log[0], phase_step, cell, p.phase, before, p.hosts, parts, what=what)
write_json(out.record, record)
Path(out.ready).touch()
