"""history.json: this run's rows appended to the results store (fsbench.history.store), and trends.html: the
trend page of this campaign's cells (fsbench.history.report)."""

import json
import logging

import pandas as pd

from fsbench.history import changes, key, points, report, store
from fsbench.toolkit.records import write_json
from fsbench.toolkit.run_step import run_step


def append(measurements, provenance, where, settings, context, timeout, trends):
    min_change = settings["history_min_change"]
    if warning := store.lock_warning(where):
        logging.getLogger("fsbench").warning("warning: %s", warning)
    with open(provenance) as f:
        prov = json.load(f)
    rows = key.entries(pd.read_csv(measurements), prov, settings, context)
    done = store.append(where, rows, timeout=timeout)
    mine = {e["series"] for e in rows}
    stored = [r for r in store.load(where, timeout) if r["series"] in mine]
    found, invalid, gone = points.points(stored), points.points(stored, invalid=True), points.left_out(stored)
    marks = store.load_marks(where, timeout)
    title = "Trends of this campaign's cells"
    judged = changes.analyse(found, marks, min_change)
    report.page(found, judged, marks, trends, title, files=False, invalid=invalid, left_out=gone)
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
