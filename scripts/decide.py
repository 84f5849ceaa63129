"""Adaptive repeats: after rep k of a cell, does it need another (for its 95% CI; with decide, for its comparisons)?"""

import pandas as pd

from fsbench.compare import questions
from fsbench.records import read_json, write_json
from fsbench.stats import repeat_decision
from fsbench.steplog import run_step


def decide(own, others, plan):
    rows = [read_json(p)["row"] for p in own]
    asked = questions(pd.DataFrame(rows), pd.DataFrame([read_json(p)["row"] for p in others]), plan["max"])
    return repeat_decision(rows, plan, asked if plan["decide"] else None)


write_json(
    snakemake.output[0],
    run_step(
        snakemake.log[0], decide, list(snakemake.input.own), list(snakemake.input.others), dict(snakemake.params.plan)
    ),
)
