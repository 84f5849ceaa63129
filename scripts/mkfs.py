"""Make the target filesystem on the array, unless the array already holds exactly that one."""

from fsbench.records import read_json, write_json
from fsbench.steplog import run_step
from fsbench.steps import make_filesystem

p = snakemake.params
state = read_json(snakemake.input[0])
write_json(snakemake.output[0], run_step(snakemake.log[0], make_filesystem, state, p.fs, p.workdir))
