"""history.json: this run's rows appended to the results store (fsbench.history.store), and trends.html: the
trend page of this campaign's cells (fsbench.history.report)."""

import json

import pandas as pd

from fsbench.history import changes, report, series, store
from fsbench.toolkit.records import write_json
from fsbench.toolkit.run_step import run_step


def append(measurements, provenance, where, context, trends):
    with open(provenance) as f:
        prov = json.load(f)
    rows = series.entries(pd.read_csv(measurements), prov, context)
    done = store.append(where, rows)
    mine = {e["series"] for e in rows}
    points = series.points(store.load(where))
    points = points[points["series"].isin(mine)] if len(points) else points
    marks = store.load_marks(where)
    report.page(points, changes.analyse(points, marks), marks, trends, "Trends of this campaign's cells", files=False)
    return done


done = run_step(
    snakemake.log[0],
    append,
    snakemake.input.measurements,
    snakemake.input.provenance,
    snakemake.params.store,
    snakemake.params.context,
    snakemake.output.trends,
    what="history",
)
write_json(snakemake.output.record, done)
