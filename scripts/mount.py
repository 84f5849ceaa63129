"""Mount the target filesystem at the array's mount point, unless it already is."""

from fsbench.records import read_json, write_json
from fsbench.steplog import run_step
from fsbench.steps import mount

p = snakemake.params
state = read_json(snakemake.input[0])
write_json(snakemake.output[0], run_step(snakemake.log[0], mount, state, p.fs, p.workdir))
