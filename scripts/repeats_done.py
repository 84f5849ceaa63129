"""An adaptive cell is finished: how many repeats it took, why it stopped, and which records are its."""

from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_step


def done(decision, records):
    return read_json(decision) | {"records": records}


decision, *records = snakemake.input
write_json(snakemake.output[0], run_step(snakemake.log[0], done, decision, records))
