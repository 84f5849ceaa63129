"""IO500 phase records (fsbench.io500.launch) as rows of the store, beside measurements.csv's: one per phase and
target, the phase as its op, its figure under its unit's metric, valid and why not (what doubts the figure;
the list's 300 s rule for a submission is not held against it), and
`record` naming the record whose cell (the CellSpec the phase ran with) is the series key, as for any row."""

import pandas as pd

from fsbench.io500 import phases
from fsbench.toolkit.records import iso_utc, read_json

WORKLOAD = "io500"


def metric(op: str) -> str:
    """The store's column of a phase's unit (io500's: GiB/s or kIOPS, thousands of items per second)."""
    return {"GiB/s": "gib_s", "kIOPS": "kiops"}[phases.BY_NAME[op].unit]


def rows(records: list) -> pd.DataFrame:
    """One row per phase record (paths); `hosts`: the hosts whose processes ran it (their number is the figure's)."""
    found = []
    for path in records:
        r = read_json(path)
        if phases.BY_NAME[r["phase"]].kind == "dummy":  # the timestamp: no figure
            continue
        cell = r["cell"]
        stonewall = (cell.get("io500") or {}).get("stonewall-time")
        doubts = r["doubts"].split("; ") if r.get("doubts") else []
        if "doubts" not in r:  # a record of io500 method 4 or before
            doubts = phases.figure_doubts(r["phase"], r["seconds"], stonewall, r["invalid_reasons"])
        found.append(
            {
                **{k: cell[k] for k in ("campaign", "host", "array", "target", "fs_type", "rep")},
                "workload": WORKLOAD,
                "op": r["phase"],
                "started_at": iso_utc(r["started_at"]),  # as the measuring steps' rows: a run's first is its start
                "engine": None,  # fsbench's own processes (fsbench.io500.run), no engine of the io cells
                metric(r["phase"]): r["value"],
                "unit": r["unit"],
                "seconds": r["seconds"],
                # judged by what doubts the figure, not by the list's 300 s rule for a submission
                "valid": not doubts,
                "invalid_reasons": "; ".join(doubts),
                "hosts": ",".join(sorted(r["hosts"])),
                "record": str(path),
            }
        )
    return pd.DataFrame(found)


def previous(stored: list[dict], records: list[dict]) -> tuple[str, dict[str, float]] | None:
    """The store's figures of one target's phases (`records`: its phase records) in the latest run of the same
    campaign that started before this one: (that run's first start, ISO; {phase: figure}), or None when the
    store holds no earlier run of it. Any earlier run, whatever its settings: the one a site looks back at."""
    cell = records[0]["cell"]
    mine = ("campaign", "host", "array", "target")
    started = iso_utc(min(r["started_at"] for r in records))
    earlier = [
        r
        for r in stored
        if r.get("workload") == WORKLOAD
        and all(r.get(k) == cell[k] for k in mine)
        and str(r["started_at"]) < started  # both iso_utc(): compared as text
        and r["op"] in phases.BY_NAME
    ]
    if not earlier:
        return None
    last = max(earlier, key=lambda r: str(r["started_at"]))["run"]
    rows_of_run = [r for r in earlier if r["run"] == last]
    return min(str(r["started_at"]) for r in rows_of_run), {r["op"]: float(r[metric(r["op"])]) for r in rows_of_run}
