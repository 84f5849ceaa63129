"""history.json: this run's rows appended to the results store (fsbench.history.store), and trends.html: the
trend page of this campaign's cells (fsbench.history.report)."""

import json
import logging

import pandas as pd

from fsbench.history import changes, key, points, report, store
from fsbench.records import write_json
from fsbench.step_report import run_step


def append(measurements, provenance, where, settings, context, timeout, trends):
    min_change = settings["history_min_change"]
    if warning := store.lock_warning(where):
        logging.getLogger("fsbench").warning("warning: %s", warning)
    with open(provenance) as f:
        prov = json.load(f)
    rows = key.entries(pd.read_csv(measurements), prov, settings, context)
    done = store.append(where, rows, timeout=timeout)
    mine = {e["series"] for e in rows}
    found = points.points(store.load(where, timeout))
    found = found[found["series"].isin(mine)] if len(found) else found
    marks = store.load_marks(where, timeout)
    report.page(
        found, changes.analyse(found, marks, min_change), marks, trends, "Trends of this campaign's cells", files=False
    )
    return done


done = run_step(
    snakemake.log[0],
    append,
    snakemake.input.measurements,
    snakemake.input.provenance,
    snakemake.params.store,
    snakemake.params.settings,
    snakemake.params.context,
    snakemake.params.timeout,
    snakemake.output.trends,
    what="history",
)
write_json(snakemake.output.record, done)
