"""The points of the series: one per series, metric and run (its median over the repeats), and the runs."""

import json

import numpy as np
import pandas as pd

from .key import KEY_COLUMNS, metrics_of


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


def _invalid(row: dict) -> bool:
    return row.get("valid") is False or str(row.get("valid")).lower() == "false"


def points(rows: list[dict], invalid: bool = False) -> pd.DataFrame:
    """One line per series, metric and run: the run's median, its interval (lowest and highest rep), n, and the
    run's context. Runs in the order they started. Rows that are not valid are left out (`left_out` says which);
    with `invalid`, the points of those rows alone, with their reasons (the trend page draws them hollow)."""
    if not rows:
        return pd.DataFrame()
    starts = runs(rows).set_index("run")["started"]
    values = []
    for r in rows:
        if _invalid(r) != invalid:  # stores may hold rows a later fsbench marks invalid: never in a verdict
            continue
        for metric in metrics_of(r):
            v = r.get(metric)
            if v is None or not np.isfinite(float(v)):
                continue
            values.append(
                {"series": r["series"], "metric": metric, "run": r["run"], "campaign": r["campaign"], "value": float(v)}
                | {"reasons": str(r.get("invalid_reasons") or "not valid") if invalid else ""}
            )
    df = pd.DataFrame(values)
    if df.empty:
        return df
    by = ["series", "metric", "run", "campaign"]
    out = df.groupby(by)["value"].agg(median="median", low="min", high="max", n="size").reset_index()
    reasons = df.groupby(by)["reasons"].agg(lambda r: "; ".join(sorted(set(r) - {""})))
    out["reasons"] = reasons.to_numpy()
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
    if col == "settings":  # the rest of the cell's key: size, runtime, cache, data, method, rwmix_read, fs, …
        shown = set(KEY_COLUMNS) | {"storage", "fs_options"}
        return " ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(key.items()) if k not in shown)
    return key[col] if key.get(col) is not None else row.get(col)  # a metadata row's test is not in its cell


def run_label(run: str) -> str:
    """A run as a page shows it: its campaign and start to the minute ('h4 12-05 17:14'), not the whole
    '<campaign> <started_at>' that names it in the store and in changes.csv."""
    campaign, _, started = str(run).rpartition(" ")
    return f"{campaign} {started[5:16].replace('T', ' ')}" if campaign and len(started) >= 16 else str(run)


def label(line) -> str:
    """A series as people name it: host/array target op pattern block size …"""
    if line.get("workload") == "io500":  # the phase is its op; its settings are in `settings`
        return f"{line['host'] or 'shared'}/{line['array']} {line['target']} io500 {line['op']}"
    parts = [f"{line['host'] or 'shared'}/{line['array']}", str(line["target"]), str(line["op"])]
    if line.get("workload") == "metadata":  # no block size, pattern or depth: empty (NaN) in its row
        return " ".join([*parts, f"{int(line['files'])} files"]) + f" · {line['engine']}"
    bs = int(line["block_size"])
    parts += [str(line["pattern"]), f"{bs // 1024}KiB" if bs < 2**20 else f"{bs // 2**20}MiB"]
    # int(): where a store holds metadata rows too, these columns come back as floats (NaN in those rows)
    parts += ["direct" if line["direct"] else "buffered", f"{int(line['streams'])}s", f"qd{int(line['iodepth'])}"]
    return " ".join(p for p in parts if p) + f" · {line['engine']}"


def left_out(rows: list[dict]) -> pd.DataFrame:
    """What no verdict can see, per series: runs whose rows were all invalid (and why), and series with fewer
    than two valid runs. Columns: series, cell, runs (how many left out, or 'the series'), why."""
    columns = ["series", "cell", "runs", "why"]
    if not rows:
        return pd.DataFrame(columns=columns)
    valid, bad = points(rows), points(rows, invalid=True)
    seen = valid.groupby("series")["run"].nunique() if len(valid) else pd.Series(dtype=int)
    found = []
    names = {}
    for frame in (bad, valid):
        for _, line in frame.groupby("series").tail(1).iterrows() if len(frame) else []:
            names[line["series"]] = label(line)
    if len(bad):
        bad_runs = bad.groupby(["series", "run"])["reasons"].agg(lambda r: "; ".join(sorted(set(r)))).reset_index()
        for series, group in bad_runs.groupby("series"):
            gone = group[~group["run"].isin(valid[valid["series"] == series]["run"] if len(valid) else [])]
            if len(gone):
                why = "; ".join(sorted({x for r in gone["reasons"] for x in r.split("; ")}))
                found.append({"series": series, "cell": names[series], "runs": len(gone), "why": f"invalid ({why})"})
    for series in names:
        if seen.get(series, 0) < 2:
            why = "no valid run" if seen.get(series, 0) == 0 else "one valid run only: nothing to compare it with yet"
            found.append({"series": series, "cell": names[series], "runs": "the series", "why": why})
    return pd.DataFrame(found, columns=columns)


def left_out_summary(table: pd.DataFrame) -> list[str]:
    """left_out in a few lines: '3 runs of 4 series left out: invalid (short)'."""
    lines = []
    runs_gone = table[table["runs"] != "the series"]
    for why, group in runs_gone.groupby("why"):
        lines.append(f"{int(group['runs'].sum())} run(s) of {group['series'].nunique()} series left out: {why}")
    for why, group in table[table["runs"] == "the series"].groupby("why"):
        lines.append(f"{group['series'].nunique()} series left out: {why}")
    return lines
