"""Series: one figure of one cell over time, across campaigns.

What makes two rows "the same cell" is the comparability key; what only describes the run is context.
A change in the key starts another series; a change in the context is what a change point is explained by.

key:      the storage as recorded (the array's kind and settings as configured, each device's model and size),
          the host when the storage is its own (not for path arrays, which hosts share), fs_type with the mkfs
          arguments (less device paths) and the mount options as read back, the test (workload, op, pattern,
          block_size, direct, streams, iodepth, shared_file, files, file_size, dirs), the engine; per series
          also the metric.
context:  campaign, date (the run's start), kernel, distribution, cpu, fsbench (git commit), each tool's version,
          cpu_governor where readable, and what the campaign's history_context adds.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

TEST = ["workload", "op", "pattern", "block_size", "direct", "streams", "iodepth", "shared_file"]
META_TEST = ["files", "file_size", "dirs"]
# Figures followed over time, and which way is better.
HIGHER, LOWER = "higher", "lower"
DIRECTION = {"mb_s": HIGHER, "mb_s_durable": HIGHER, "lat_p50_us": LOWER, "iops": HIGHER}
# Columns of changes.csv and series output that name the series (array and target: as the latest run calls them).
KEY_COLUMNS = ["host", "storage", "array", "target", "fs_type", "fs_options", *TEST, *META_TEST, "engine"]


def metrics_of(row: dict) -> list[str]:
    """Metadata rows: files per second. Block I/O: MB/s (writes also with the flush), and median latency."""
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


def key_of(row: dict, provenance: dict) -> dict:
    entry = _array_entry(provenance, row["host"], row["array"])
    spec = entry.get("spec", {})
    storage = dict(spec) | {
        "devices": [{"model": d.get("model"), "size_bytes": d.get("size_bytes")} for d in entry.get("devices", [])]
    }
    fs = entry.get("targets", {}).get(row["target"], {})
    options = {}
    if fs:
        mkfs = [a for a in fs.get("mkfs_argv", []) if not str(a).startswith("/dev/")]
        options = {"mkfs": mkfs, "mount": fs.get("mount_options_read_back")}
    key = {
        "host": None if spec.get("kind") == "path" else row["host"],
        "storage": storage,
        "fs_type": row["fs_type"],
        "fs_options": options,
        "engine": row["engine"],
    }
    tests = TEST + (META_TEST if row.get("workload") == "metadata" else [])
    return key | {c: plain(row.get(c)) for c in tests}


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
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return ""


def context_of(row: dict, provenance: dict, extra: dict, version: str, governor: str) -> dict:
    host = provenance.get("host", {})
    machine = provenance.get("machines", {}).get(row["host"]) or host
    context = {
        "campaign": row["campaign"],
        "date": str(row["started_at"])[:10],
        "kernel": machine.get("kernel", ""),
        "distribution": machine.get("distribution", ""),
        "cpu": machine.get("cpu", ""),
        "fsbench": version,
        "cpu_governor": governor,
    }
    context |= {name: str(v).splitlines()[0] if v else "" for name, v in host.get("tools", {}).items()}
    return context | {k: str(v) for k, v in extra.items()}


def entries(measurements: pd.DataFrame, provenance: dict, extra: dict) -> list[dict]:
    """What a run appends: each row with its series key and context."""
    version, governor = fsbench_version(), cpu_governor()
    found = []
    for row in measurements.to_dict("records"):
        key = key_of(row, provenance)
        found.append(
            {
                "row": row,
                "series": series_id(key),
                "key": key,
                "context": context_of(row, provenance, extra, version, governor),
            }
        )
    return found


def _storage_text(storage: dict) -> str:
    spec = {k: v for k, v in storage.items() if k != "devices" and v is not None}
    models = sorted({f"{d['model']} {d['size_bytes']}" for d in storage.get("devices", [])})
    return " ".join(f"{k}={v}" for k, v in sorted(spec.items())) + (f" [{', '.join(models)}]" if models else "")


def runs(rows: list[dict]) -> pd.DataFrame:
    """Every run in the store (a measuring pass, fsbench.history.store): its campaign, start, hosts, rows, cells."""
    if not rows:
        return pd.DataFrame(columns=["run", "campaign", "started", "hosts", "rows", "series"])
    df = pd.DataFrame(rows)
    out = df.groupby("run").agg(
        campaign=("campaign", "first"),
        started=("started_at", "min"),
        hosts=("host", lambda h: ",".join(sorted(set(map(str, h))))),
        rows=("rep", "size"),
        series=("series", "nunique"),
    )
    return out.reset_index().sort_values("started").reset_index(drop=True)


def points(rows: list[dict]) -> pd.DataFrame:
    """One line per series, metric and run: the run's median, its interval (lowest and highest rep), n, and the
    run's context. Runs in the order they started. Invalid rows are left out (left_out says which)."""
    if not rows:
        return pd.DataFrame()
    starts = runs(rows).set_index("run")["started"]
    values = []
    for r in rows:
        if r.get("valid") is False:  # stores may hold rows a later fsbench marks invalid: never in a verdict
            continue
        for metric in metrics_of(r):
            v = r.get(metric)
            if v is None or not np.isfinite(float(v)):
                continue
            values.append(
                {"series": r["series"], "metric": metric, "run": r["run"], "campaign": r["campaign"], "value": float(v)}
            )
    df = pd.DataFrame(values)
    if df.empty:
        return df
    by = ["series", "metric", "run", "campaign"]
    out = df.groupby(by)["value"].agg(median="median", low="min", high="max", n="size").reset_index()
    out["started"] = out["run"].map(starts)
    latest = {}  # per series: the latest run's row, its key and display names
    contexts = {}
    for r in sorted(rows, key=lambda r: str(r["started_at"])):
        latest[r["series"]] = r
        contexts.setdefault((r["series"], r["run"]), r["context"])
    out["context"] = [contexts[(s, c)] for s, c in zip(out["series"], out["run"], strict=True)]
    for col in KEY_COLUMNS:
        out[col] = [_key_value(latest[s], col) for s in out["series"]]
    return out.sort_values(["series", "metric", "started"]).reset_index(drop=True)


def _key_value(row: dict, col: str):
    key = row["key"]
    if col == "storage":
        return _storage_text(key["storage"])
    if col == "fs_options":
        opts = key.get("fs_options") or {}
        return " ".join(opts.get("mkfs", [])) + (f" -o {opts['mount']}" if opts.get("mount") else "")
    if col in ("array", "target"):
        return row[col]
    return key.get(col)


def label(line) -> str:
    """A series as people name it: host/array target op pattern block size …"""
    bs = line["block_size"]
    size = f"{int(bs) // 1024}KiB" if bs and int(bs) < 2**20 else (f"{int(bs) // 2**20}MiB" if bs else "")
    parts = [f"{line['host'] or 'shared'}/{line['array']}", str(line["target"]), str(line["op"]), str(line["pattern"])]
    parts += [size, "direct" if line["direct"] else "buffered", f"{line['streams']}s", f"qd{line['iodepth']}"]
    if line.get("workload") == "metadata":
        parts = parts[:3] + [f"{line['files']} files"]
    return " ".join(p for p in parts if p) + f" · {line['engine']}"
