"""Attach the array's devices (loop images under scratch); a temp flag file says which."""

from fsbench.records import write_json
from fsbench.steplog import run_step
from fsbench.steps import attach

p = snakemake.params
write_json(snakemake.output[0], run_step(snakemake.log[0], attach, p.array, p.workdir, p.name))
