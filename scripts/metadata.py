"""metadata: create, stat, read and delete many small files on the cell's target, each phase timed."""

from fsbench import steps
from fsbench.plan import describe
from fsbench.records import read_json, write_json
from fsbench.step_report import run_step

p = snakemake.params
what = describe(p.cell, "metadata")
record = run_step(
    snakemake.log[0], steps.metadata_step, p.cell, read_json(snakemake.input.setup), p.cell["workdir"], what=what
)
write_json(snakemake.output[0], record)
