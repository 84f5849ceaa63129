"""io500.csv: every target's phases, bw, md and the score, from the phase records; and each target's
result_summary.txt and result.txt in io500's formats, and its bar chart (phases.png), beside the previous run of
the same campaign where the history store (config history) holds one."""

import logging

from sqlalchemy.exc import SQLAlchemyError

from fsbench.history import io500 as history_io500
from fsbench.history import store as history_store
from fsbench.io500 import result_files
from fsbench.io500.table import by_target, table
from fsbench.plots.io500 import phase_chart
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def stored_rows(where, timeout) -> list[dict]:
    """The store's rows, or none (no store; or one out of reach: the chart is still drawn, without them)."""
    if not where:
        return []
    try:
        return history_store.load(where, timeout)
    except (SQLAlchemyError, OSError) as e:  # the figures do not depend on it
        logging.getLogger("fsbench").warning("warning: no previous run on the charts: %s", e)
        return []


def write(paths, out, folder, where, timeout):
    records = [read_json(r) for r in paths]
    df = table(records)
    df.to_csv(out, index=False)
    files = result_files.write(records, df, folder)
    stored = stored_rows(where, timeout)
    targets = by_target(records)
    for name, part in df.groupby("target", sort=False):  # beside its result files: what the summary shows
        previous = history_io500.previous(stored, list(targets[name].values()))
        before = f"beside the run started {previous[0]}" if previous else "no earlier run in the store"
        logging.getLogger("fsbench").info("phases.png of %s: %s", name, before)
        chart = phase_chart(part, str(name), result_files.target_dir(folder, name) / "phases.png", previous)
        files.append(str(chart))
    return {"rows": len(df), "files": files}


run_step(
    snakemake.log[0],
    write,
    list(snakemake.input),
    snakemake.output.csv,
    snakemake.output.files,
    snakemake.params.store,
    snakemake.params.timeout,
)
