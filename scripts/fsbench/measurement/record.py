"""The row and the record: one row of measurements.csv from an engine's figure, and the step's record around
it (the row, its series, the command, the cell, the setup and the machine)."""

import socket

from fsbench.campaign.cells import CellSpec
from fsbench.engines.verify import COLUMNS as VERIFY_COLUMNS
from fsbench.measurement import provenance
from fsbench.measurement.judgement import series_flags, series_of
from fsbench.measurement.rows import COLUMNS, rate
from fsbench.storage.arrays import Target
from fsbench.toolkit import flags
from fsbench.toolkit.latency import COLUMNS as LATENCY_COLUMNS


def row_of(cell: CellSpec, op: str, result: dict, target: Target, workload: str = "io") -> dict:
    """One row of measurements.csv: the cell's columns, and the figure an engine (or the metadata test) gave."""
    settings = cell.as_record()
    row = {k: settings.get(k, "") for k in COLUMNS}
    row.update(
        workload=workload,
        op=op,
        host=socket.gethostname(),
        bytes=result["bytes"],
        seconds=result["seconds"],
        mb_s=rate(result["bytes"], result["seconds"]),
        seconds_durable=result["seconds_durable"],
        mb_s_durable=rate(result["bytes"], result["seconds_durable"]),
        cached_before=result.get("cached_before", float("nan")),
        started_at=result["started_at"],
        ops=result["ops"],
        iops=result["ops"] / result["seconds"] if result["seconds"] > 0 else float("nan"),
        **{k: result[k] for k in LATENCY_COLUMNS},
        **{k: result.get(k, float("nan")) for k in ("cpu_s_per_gb", "device_bytes", "write_amplification")},
        **{k: result.get(k, float("nan")) for k in VERIFY_COLUMNS},
    )
    if cell.target == "path":  # the filesystem the path lies on, as found (every row of the folder alike)
        row["fs_type"] = target.array.fs_type
    return row


def measurement_record(cell: CellSpec, op: str, result: dict, target: Target, **extra) -> dict:
    row = row_of(cell, op, result, target)
    row["flags"] = flags.doubts(row, result.get("expected_bytes", cell.size * cell.streams), result["streams"])
    ts = extra.pop("timeseries", None) or series_of(cell, result)
    row["flags"] = flags.add(row["flags"], series_flags(ts))
    return {
        "row": row,
        "timeseries": ts,
        "command": result["command"],
        "streams": result["streams"],
        "cell": cell.as_record(),
        "setup": target.as_record(),
        "machine": provenance.machine(),
        **extra,
    }
