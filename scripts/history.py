"""history.json: this run's rows (measurements.csv's, and each IO500 phase's from its record) appended to the
results store (fsbench.history.store), and trends.html: the trend page of this campaign's cells, judged with every
series of the store as `history changes` judges them (fsbench.history.commands.trends)."""

import json
import logging

import pandas as pd

from fsbench.history import commands, io500, key, store
from fsbench.toolkit.records import write_json
from fsbench.toolkit.run_step import run_step


def append(measurements, phases, provenance, where, settings, context, timeout, trends):
    min_change = settings["history_min_change"]
    if warning := store.lock_warning(where):
        logging.getLogger("fsbench").warning("warning: %s", warning)
    with open(provenance) as f:
        prov = json.load(f)
    rows = key.entries(pd.read_csv(measurements), prov, settings, context)
    rows += key.entries(io500.rows(phases), prov, settings, context)  # IO500's phase records, if any
    done = store.append(where, rows, timeout=timeout)
    mine = {e["series"] for e in rows}  # the page shows this campaign's cells, judged with the whole store
    commands.trends(where, trends, "Trends of this campaign's cells", min_change, timeout, series=mine, files=False)
    return done


done = run_step(
    snakemake.log[0],
    append,
    snakemake.input.measurements,
    list(snakemake.input.io500),
    snakemake.input.provenance,
    snakemake.params.store,
    snakemake.params.settings,
    snakemake.params.context,
    snakemake.params.timeout,
    snakemake.output.trends,
    what="history",
)
write_json(snakemake.output.record, done)
