"""Adaptive repeats: after rep k of a cell, does it need another (for its 95% CI; with decide, for its comparisons)?"""

import pandas as pd

from fsbench.analysis.compare import questions
from fsbench.analysis.repeats import repeat_decision
from fsbench.measurement.rows import rows_of
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_step


def rows_in(paths):
    """The measurement rows of records: one a write or read, two a mix's read (none its layout write)."""
    return [row for path in paths for row in rows_of(read_json(path))]


def decide(own, others, plan):
    rows = rows_in(own)
    asked = questions(pd.DataFrame(rows), pd.DataFrame(rows_in(others)), plan["max"])
    return repeat_decision(rows, plan, asked if plan["decide"] else None)


write_json(
    snakemake.output[0],
    run_step(
        snakemake.log[0], decide, list(snakemake.input.own), list(snakemake.input.others), dict(snakemake.params.plan)
    ),
)
