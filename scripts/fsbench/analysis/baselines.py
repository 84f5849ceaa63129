"""Baselines: earlier results shown beside a campaign's own (docs/contract.md, `baselines:`).

A baseline is an earlier measurements.csv or a dd log as people paste it: headings ("Raw write",
"EXT3 read"), the dd command line, dd's closing lines in any common format and optionally the
shell's `real` line. Each dd run becomes one row; status=progress lines are not runs.
"""

import io
import math
from pathlib import Path

import pandas as pd

from fsbench.engines.ddlog import parse_dd_log
from fsbench.engines.verify import COLUMNS as VERIFY_COLUMNS
from fsbench.measurement.rows import COLUMNS, rate
from fsbench.toolkit.latency import COLUMNS as LATENCY_COLUMNS

_TEXT_COLUMNS = [
    "campaign",
    "host",
    "array",
    "target",
    "fs_type",
    "op",
    "pattern",
    "engine",
    "cache",
    "started_at",
    "flags",
]


def dd_log_rows(name: str, text: str) -> list[dict]:
    """The dd runs in `text` as measurements.csv rows (rows.COLUMNS) of the baseline `name`."""
    rows, seen = [], {}
    for run in parse_dd_log(text):
        key = (run["target"], run["op"], run["block_size"])
        seen[key] = seen.get(key, 0) + 1
        durable = run["seconds_durable"]
        ops = sum(run["records_out"]) if run.get("records_out") else math.nan  # dd's records: one call each
        rows.append(
            {
                "campaign": name,
                "host": "",
                "array": name,
                "target": run["target"],
                "fs_type": run["fs_type"],
                "workload": "io",
                "op": run["op"],
                "pattern": "seq",
                "block_size": math.nan if run["bs"] is None else run["bs"],
                "direct": run["direct"],
                "streams": 1,
                "iodepth": 1,
                "shared_file": False,
                **dict.fromkeys(["files", "file_size", "dirs"], math.nan),
                "rep": seen[key],
                "bytes": run["bytes"],
                "seconds": run["seconds"],
                "mb_s": rate(run["bytes"], run["seconds"]),
                "seconds_durable": durable,
                "mb_s_durable": rate(run["bytes"], durable),
                "engine": "dd-log",
                "cache": "",
                "cached_before": math.nan,
                "started_at": "",
                "ops": ops,
                "iops": ops / run["seconds"] if run["seconds"] > 0 else math.nan,
                **dict.fromkeys([*LATENCY_COLUMNS, "cpu_s_per_gb", "device_bytes", "write_amplification"], math.nan),
                **dict.fromkeys(VERIFY_COLUMNS, math.nan),  # dd checks nothing
                "flags": run["flags"],
            }
        )
    return rows


def load_baseline(name: str, path) -> pd.DataFrame:
    """The rows of baseline `name`: an earlier measurements.csv (campaign set to `name`) or a dd log."""
    path = Path(path)
    try:
        text = path.read_bytes().decode(errors="replace").lstrip("\ufeff")  # keeps status=progress \r
    except OSError as e:
        raise ValueError(f"baseline {name!r}: cannot read {path}: {e.strerror or e}") from e
    header = {h.strip().strip('"') for h in text.split("\n", 1)[0].split(",")}
    if {"op", "bytes", "seconds"} <= header:
        try:
            df = pd.read_csv(io.StringIO(text))
        except ValueError as e:
            raise ValueError(f"baseline {name!r}: {path} looks like measurements.csv but cannot be read: {e}") from e
        for column in COLUMNS:
            if column not in df:
                df[column] = "" if column in _TEXT_COLUMNS else math.nan
        df["iodepth"] = df["iodepth"].fillna(1)  # measured before the column existed: one call at a time
        df["shared_file"] = df["shared_file"].astype(object).fillna(False)  # and each stream in its own file
        df["workload"] = df["workload"].astype(object).fillna("io")  # block I/O: before metadata rows existed
        for column in _TEXT_COLUMNS:
            df[column] = df[column].astype(object).where(df[column].notna(), "").astype(str)
        df["campaign"] = name
        df = df[COLUMNS + [c for c in df.columns if c not in COLUMNS]]
    else:
        df = pd.DataFrame(dd_log_rows(name, text), columns=COLUMNS)
    if df.empty:
        raise ValueError(
            f"baseline {name!r}: no runs in {path}; expected a dd log (dd's 'copied'/'transferred' lines)"
            " or a measurements.csv with at least the columns op, bytes, seconds"
        )
    return df
