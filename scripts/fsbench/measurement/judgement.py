"""The series judgement: a measurement's time series at the cell's io.log_interval, judged (a drop, steady
state), and the flags that judgement gives its row."""

from fsbench.campaign.cells import CellSpec
from fsbench.toolkit import flags, timeseries


def series_of(cell: CellSpec, result: dict) -> dict:
    """The measurement's time series at the cell's io.log_interval, judged with its io.drop and io.steady."""
    steady = cell.steady if cell.runtime else None  # the steady-state test is for time-based runs
    return judged_series(result, cell.log_interval, cell.drop, steady)


def judged_series(result: dict, log_interval=None, drop=None, steady=None) -> dict:
    """An engine's recorded series as the record keeps it (timeseries.series at log_interval, default 1 s), with
    what it says about the figure (`judged`: the drop found, and the steady-state test where `steady` asks)."""
    recorded = result.get("recorded_series") or {}
    ts = timeseries.series(recorded, result["seconds"], log_interval or timeseries.LOG_INTERVAL)
    if ts:
        ts["judged"] = timeseries.judge(ts, drop or timeseries.DROP_SHARE, steady)
    return ts


def series_flags(ts: dict) -> list[str]:
    """drop and not-steady (fsbench.toolkit.flags), from the series' judgement."""
    judged = ts.get("judged", {})
    found = [flags.DROP] if judged.get("drop") else []
    if "steady" in judged and not judged["steady"]["steady"]:
        found.append(flags.NOT_STEADY)
    return found
