"""Adaptive repeats: after rep k of a cell, does its 95% CI still need another repeat?"""

from fsbench.records import read_json, write_json
from fsbench.stats import repeat_decision
from fsbench.steplog import run_step


def decide(paths, plan):
    return repeat_decision([read_json(p)["row"] for p in paths], plan)


write_json(snakemake.output[0], run_step(snakemake.log[0], decide, list(snakemake.input), snakemake.params.plan))
