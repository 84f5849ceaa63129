"""mount: mount the filesystem mkfs made, or find it mounted as asked."""

from pathlib import Path

from fsbench.plan import describe
from fsbench.records import read_json, write_json
from fsbench.step_report import run_step
from fsbench.steps import mount

p = snakemake.params
record = run_step(
    snakemake.log[0], mount, p.cell, read_json(snakemake.input.mkfs), p.cell["workdir"], what=describe(p.cell, "mount")
)
write_json(snakemake.output.record, record)
Path(snakemake.output.ready).touch()
