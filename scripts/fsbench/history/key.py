"""The comparability key: which rows are one series (one figure of one cell over time), and what only describes
a run (context).

The key is the cell as its measuring step ran it: the CellSpec in the step's record (plan.Plan.cell_spec, so
every setting that re-measures a cell is in it, io.runtime and io.size included), less what only names or places
it, with the storage and filesystem as they were found. A setting added to CellSpec lands in the key unless it is
named in CONTEXT_FIELDS or NAMES. A change in the key starts another series; a change in the context is what a
change point is explained by.

key:      the cell's settings (fsbench.campaign.cells.CellSpec: the test, size, runtime, rwmix_read, data, engine,
          method, cache, the metadata test's, the array as configured, the filesystem's type, mkfs and mount options as
          configured), with each device's model and size, the mkfs arguments (less device paths) and the mount
          options as read back, the host when the storage is its own (not for path arrays, which hosts share);
          per series also the metric. An IO500 phase (fsbench.history.io500): its record's cell (io500's
          settings and read_from), the phase as op, and the hosts that ran it.
context:  campaign, date (the run's start), scratch, the time series' judging settings (log_interval, drop,
          steady), kernel, distribution, cpu, fsbench (git commit), each tool's version, cpu_governor where
          readable, the campaign's other settings (precondition, hosts_parallel, repeats, …) and what its
          history_context adds.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from fsbench.measurement.rows import META_TEST, TEST
from fsbench.toolkit.system import kernel_setting

from . import io500

# A cell's fields that only name it (the latest run's names are shown) or place it, and those that describe how
# the run was judged or where it lived: context. Every other field of the cell is the key.
NAMES = ("campaign", "array", "target", "test", "rep")
CONTEXT_FIELDS = ("workdir", "log_interval", "drop", "steady", "shared_dir", "slot_base")
# The campaign's own settings, not context: its name, where its results go and how they are judged (its
# history_context entries come as they are, not under history_context.).
NOT_CONTEXT = ("campaign", "history", "history_timeout", "history_min_change", "history_context")
# Figures followed over time, and which way is better.
HIGHER, LOWER = "higher", "lower"
DIRECTION = {
    "mb_s": HIGHER,
    "mb_s_durable": HIGHER,
    "lat_p50_us": LOWER,
    "iops": HIGHER,
    "gib_s": HIGHER,
    "kiops": HIGHER,
}
# Columns of changes.csv and series output that name the series (array and target: as the latest run calls them;
# settings: the rest of the cell's key, as text).
KEY_COLUMNS = [
    "host",
    "storage",
    "array",
    "target",
    "fs_type",
    "fs_options",
    "workload",
    "op",
    *TEST,
    *META_TEST,
    "engine",
    "settings",
]


def metrics_of(row: dict) -> list[str]:
    """Metadata rows: files per second. IO500 phases: their figure. Block I/O: MB/s (writes also with the flush),
    and median latency."""
    if row.get("workload") == io500.WORKLOAD:
        return [io500.metric(row["op"])]
    if row.get("workload") == "metadata":
        return ["iops"]
    return ["mb_s", "mb_s_durable", "lat_p50_us"] if row["op"] == "write" else ["mb_s", "lat_p50_us"]


def plain(value):
    """A CSV cell as JSON, the same whichever other rows the CSV held: NaN (an empty cell) as null, numpy
    scalars as Python ones, whole floats as ints (a column with empty cells reads 1048576 as 1048576.0)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if np.isnan(value):
            return None
        if value.is_integer():
            return int(value)
    return value


def _array_entry(provenance: dict, host: str, array: str) -> dict:
    arrays = provenance.get("arrays", {})
    return arrays.get(f"{host}/{array}") or arrays.get(array) or {}


def key_of(row: dict, cell: dict, provenance: dict) -> dict:
    """The series key of one measurements.csv row measured by `cell` (its CellSpec, as the record keeps it)."""
    entry = _array_entry(provenance, row["host"], row["array"])
    key = {k: plain(v) for k, v in cell.items() if k not in NAMES + CONTEXT_FIELDS}
    spec = key.pop("array_spec")
    key["storage"] = dict(spec) | {
        "devices": [{"model": d.get("model"), "size_bytes": d.get("size_bytes")} for d in entry.get("devices", [])]
    }
    fs = key.pop("fs") or {}
    key["fs"] = {k: v for k, v in fs.items() if k not in ("name", "fingerprint")} or None
    read_back = entry.get("targets", {}).get(row["target"], {})
    options = {}
    if read_back:
        mkfs = [a for a in read_back.get("mkfs_argv", []) if not str(a).startswith("/dev/")]
        options = {"mkfs": mkfs, "mount": read_back.get("mount_options_read_back")}
    return (
        key
        | {
            # the host as measured (a cell's own says `local` where the campaign names none); none for shared storage
            "host": None if spec.get("kind") == "path" else row["host"],
            "fs_type": row["fs_type"],  # a path array's: the filesystem found there
            "fs_options": options,
            "workload": row.get("workload") or "io",
            "op": row["op"],
            "engine": row.get("engine"),
            # an IO500 phase: the hosts that ran it (the phase's processes are io500.processes on each)
        }
        | ({"hosts": row["hosts"]} if row.get("workload") == io500.WORKLOAD else {})
    )


def series_id(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def fsbench_version() -> str:
    """The git commit of the fsbench that measured ("" outside a git checkout)."""
    repo = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def cpu_governor() -> str:
    return kernel_setting("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def flat(settings, prefix: str = "") -> dict[str, str]:
    """Nested settings as `a.b: value` lines (lists and scalars as JSON text)."""
    if isinstance(settings, dict) and settings:
        return {k: v for name, sub in settings.items() for k, v in flat(sub, f"{prefix}{name}.").items()}
    return {prefix.rstrip("."): json.dumps(settings, sort_keys=True, default=str)}


def context_of(row: dict, cell: dict, provenance: dict, settings: dict, extra: dict, version: str, governor: str):
    host = provenance.get("host", {})
    machine = provenance.get("machines", {}).get(row["host"]) or host
    # the campaign's settings; those of the cell are its key (a change there starts a new series anyway)
    context = flat({k: v for k, v in settings.items() if k not in NOT_CONTEXT})
    context |= {f"cell.{k}": json.dumps(cell[k], sort_keys=True) for k in CONTEXT_FIELDS[1:] if k in cell}
    context |= {
        "campaign": row["campaign"],
        "date": str(row["started_at"])[:10],
        # <scratch>/<campaign>/<array>[.<host>] (fsbench.campaign.cells.array_dir): where loop images and mounts lived
        "scratch": str(Path(cell["workdir"]).parent.parent) if cell.get("workdir") else "",
        "kernel": machine.get("kernel", ""),
        "distribution": machine.get("distribution", ""),
        "cpu": machine.get("cpu", ""),
        "transparent_hugepage": machine.get("transparent_hugepage", ""),
        "page_reporting_order": machine.get("page_reporting_order", ""),
        "fsbench": version,
        "cpu_governor": governor,
    }
    context |= {name: str(v).splitlines()[0] if v else "" for name, v in host.get("tools", {}).items()}
    return context | {k: str(v) for k, v in extra.items()}


def read_cell(row: dict) -> dict:
    """The CellSpec a measurements.csv row was measured with, from its record (the `record` column)."""
    path = row.get("record")
    if not isinstance(path, str) or not Path(path).is_file():
        raise ValueError(
            f"measurements.csv row {row.get('target')}/{row.get('op')} rep {row.get('rep')}: no record "
            f"{path!r} to read its cell from (aggregate again)"
        )
    with open(path) as f:
        return json.load(f)["cell"]


def entries(measurements: pd.DataFrame, provenance: dict, settings: dict, extra: dict, cell_of=read_cell) -> list:
    """What a run appends: each row with its series key and context. `settings`: the campaign (validated)."""
    version, governor = fsbench_version(), cpu_governor()
    found = []
    for row in measurements.to_dict("records"):
        cell = cell_of(row)
        key = key_of(row, cell, provenance)
        context = context_of(row, cell, provenance, settings, extra, version, governor)
        found.append({"row": row, "series": series_id(key), "key": key, "context": context})
    return found
