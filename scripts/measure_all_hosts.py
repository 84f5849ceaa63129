"""Measure one all-hosts cell and repeat: every host writes at once, then every host reads at once."""

from pathlib import Path

from fsbench.records import write_json
from fsbench.steplog import run_step
from fsbench.together import measure

p = snakemake.params
parts = Path(snakemake.output.write).parent / "hosts"  # each host's own record, beside the cell's
records = run_step(snakemake.log[0], measure, p.cell, p.hosts, p.scratch, parts)
write_json(snakemake.output.write, records["write"])
write_json(snakemake.output.read, records["read"])
