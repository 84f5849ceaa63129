"""Latency percentile curves: each cell's whole distribution (p50 … p99.99), read from the histograms its
measurement records keep per stream (fsbench.toolkit.latency), the repeats of a cell merged by adding their counters.

measurements.csv keeps p50, p90, p99 and p99.9 per row; the records keep every bucket, so the curve can go as far
into the tail as the operations allow (a p99.99 needs 10,000 of them: fewer, and the curve stops short of it).
"""

import pandas as pd

from fsbench.measurement.rows import rows_of
from fsbench.toolkit.latency import Histogram

# The percentiles a curve is drawn through: enough points between the nines for the bends to show.
GRID = [50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99]
# What makes a curve: one per cell, its repeats pooled.
KEYS = ["campaign", "host", "array", "target", "fs_type", "op"]
KEYS += ["pattern", "block_size", "direct", "streams", "iodepth", "shared_file"]
COLUMNS = [*KEYS, "percentile", "latency_us", "ops"]


def _merged(streams: list[dict]) -> Histogram:
    hist = Histogram()
    for stream in streams:
        if stream.get("latency"):
            hist.merge(Histogram.from_record(stream["latency"]))
    return hist


def histograms(record: dict) -> list[tuple[dict, Histogram]]:
    """(row, the histogram of its operations over all its streams) for each block I/O row of a record: a write or
    read one, a mix's read and write (each op's streams), an all-hosts cell's whole (its hosts' streams)."""
    rows = rows_of(record) if "row" in record or "rows" in record else []
    found = []
    for row in rows:
        if row.get("workload", "io") != "io":
            continue  # the metadata test's phases: no block I/O latency
        streams = record.get("streams", [])
        if "mix" in record and row["op"] == "write":
            streams = record["mix"]["write"].get("streams", [])
        if isinstance(streams, list):
            found.append((row, _merged(streams)))
    return found


def percentile_curves(records: list[dict]) -> pd.DataFrame:
    """COLUMNS: per cell (its repeats' histograms added) and percentile of GRID the cell's operations reach
    (p with at least 100 / (100 - p) operations), the latency in µs and the operations behind it."""
    cells: dict[tuple, Histogram] = {}
    rows: dict[tuple, dict] = {}
    for record in records:
        for row, hist in histograms(record):
            key = tuple(str(row.get(k, "")) for k in KEYS)
            cells[key] = cells.get(key, Histogram()).merge(hist)
            rows.setdefault(key, row)
    out = []
    for key, hist in cells.items():
        for p in GRID:
            if hist.count and hist.count * (100 - p) / 100 >= 1:
                row = rows[key]
                out.append(
                    {k: row.get(k) for k in KEYS}
                    | {"percentile": p, "latency_us": hist.percentile(p) / 1e3, "ops": hist.count}
                )
    return pd.DataFrame(out, columns=COLUMNS)
