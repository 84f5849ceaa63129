"""measurements.csv from the per-measurement records, always rebuilt whole; why each cell stopped repeating."""

from pathlib import Path

import pandas as pd

from fsbench.analysis.stats import TEST, flag_above_raw
from fsbench.analysis.validity import with_validity
from fsbench.measurement.rows import COLUMNS, rows_of
from fsbench.toolkit.records import read_json

# Beyond the contract's columns: what made each figure (its method version, engines.table, and its command), and where
# its full record is; then whether the figure is valid and why not (fsbench.analysis.validity), judged here from the
# flags so that old records need no new measurement.
EXTRA = ["method", "command", "record"]
VALIDITY = ["valid", "invalid_reasons"]
# What identifies a cell across its repeats and ops.
CELL_KEYS = ["host", "array", "target", *TEST]


def record_paths(paths: list[str]) -> list[str]:
    """Record files, with an adaptive cell's done.json standing for the records of every repeat it took."""
    found = []
    for path in paths:
        found += read_json(path)["records"] if Path(path).name == "done.json" else [str(path)]
    return found


def measurements(paths: list[str]) -> pd.DataFrame:
    rows = []
    for path in record_paths(paths):
        rec = read_json(path)
        made = {"method": rec.get("cell", {}).get("method", 1), "command": rec["command"], "record": str(path)}
        # A metadata record holds a row per phase; a measurement record one.
        rows += [row | made for row in rows_of(rec)]
        # An all-hosts cell also keeps each host's own figure, as host '<name>@all'.
        rows += [part | made for part in rec.get("parts", [])]
    df = pd.DataFrame(rows, columns=COLUMNS + EXTRA)
    return with_validity(flag_above_raw(df))[COLUMNS + EXTRA + VALIDITY]


def with_stops(summary: pd.DataFrame, paths: list[str], measured: pd.DataFrame) -> pd.DataFrame:
    """summary with `stopped` (fixed, target_ci or max) and `stop_reason` per cell."""
    stops = []
    for path in paths:
        if Path(path).name == "done.json":
            done = read_json(path)
            row = read_json(done["records"][0])["row"]
            stops.append({k: row[k] for k in CELL_KEYS} | {"stopped": done["stopped"], "stop_reason": done["reason"]})
    out = summary.copy()
    if not stops:
        reps = measured["rep"].max() if len(measured) else 0
        return out.assign(stopped="fixed", stop_reason=f"fixed: io.repeats is {reps}")
    found = pd.DataFrame(stops).astype({"block_size": "int64", "streams": "int64", "direct": "bool"})
    out = out.astype({"block_size": "int64", "streams": "int64", "direct": "bool"})
    return out.merge(found, on=CELL_KEYS, how="left")
