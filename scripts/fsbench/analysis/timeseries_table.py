"""timeseries.csv: every measurement's series (bytes and operations per interval, from its record's
`timeseries`) as a tidy table (plotted by fsbench.plots.timeseries).

A row per measurement and interval: the cell's columns as in measurements.csv, rep, engine, then t_s (the
interval's end, seconds from the measurement's start), interval_s (its length: the last one may be shorter),
bytes, ops, mb_s (bytes / interval_s / 10^6) and iops. dd records no series: its measurements have no rows here.
"""

import numpy as np
import pandas as pd

from fsbench.analysis.aggregate import record_paths
from fsbench.measurement.rows import TEST, WHERE, rows_of
from fsbench.toolkit.records import read_json

SERIES_KEY = [*WHERE, *TEST, "rep", "engine"]
COLUMNS = [*SERIES_KEY, "t_s", "interval_s", "bytes", "ops", "mb_s", "iops"]


def _rows(row: dict, ts: dict) -> list[dict]:
    if not ts:
        return []
    cell = {k: row.get(k, "") for k in SERIES_KEY}
    found = []
    for t, length, b, o in zip(ts["t_s"], ts["interval_lengths_s"], ts["bytes"], ts["ops"], strict=True):
        ok = length > 0
        found.append(
            cell
            | {
                "t_s": t,
                "interval_s": length,
                "bytes": b,
                "ops": o,
                "mb_s": b / length / 1e6 if ok else np.nan,
                "iops": o / length if ok else np.nan,
            }
        )
    return found


def series_of_record(rec: dict) -> list[tuple[dict, dict]]:
    """(row, its series) of each figure a record holds: the measurement (a mix: its read and its write), and an
    all-hosts cell's hosts."""
    pairs = []
    rows = rows_of(rec)
    if rec.get("mix"):  # a mix's rows: read (the record's own series), then write
        pairs += [(rows[0], rec.get("timeseries", {})), (rows[1], rec["mix"]["write"].get("timeseries", {}))]
    elif rec.get("row", {}).get("workload", "io") != "metadata" and rows:
        pairs.append((rows[0], rec.get("timeseries", {})))
    pairs += list(zip(rec.get("parts", []), rec.get("parts_timeseries", []), strict=False))
    return pairs


def timeseries_table(paths: list[str]) -> pd.DataFrame:
    rows = []
    for path in record_paths(paths):
        for row, ts in series_of_record(read_json(path)):
            rows += _rows(row, ts)
    return pd.DataFrame(rows, columns=COLUMNS)
