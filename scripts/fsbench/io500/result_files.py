"""io500's own result files, per target, from io500.csv's rows and the phase records: result_summary.txt and
result.txt in the formats of io500's src/main.c, so that what reads io500's files reads fsbench's. The version line
and the hash fields say fsbench wrote them: no value io500's --verify would take for its own (its hashes are hex
numbers; fsbench's are a word). read_summary() reads either application's result_summary.txt."""

import math
import re
import time
from pathlib import Path

import pandas as pd

from fsbench.engines.table import IO500_METHOD
from fsbench.io500 import phases as ph
from fsbench.io500.table import label

VERSION = f"fsbench-io500-method-{IO500_METHOD}"  # io500 prints its git describe here
HASH = "fsbench-not-io500"  # never a hex number: io500 --verify takes no fsbench file for its own


def _pair(key: str, value) -> str:
    return f"{key:<15} = {value}"  # io500's PRINT_PAIR: "%-15s = "


def _f(value: float) -> str:
    return f"{value:f}" if not math.isnan(value) else "0.000000"


def summary(part: pd.DataFrame, mode: str, version: str = VERSION) -> str:
    """result_summary.txt of one target (its io500.csv rows); `version`: the method that measured them."""
    rows = part.set_index("phase")
    out = [f"IO500 version {version} ({mode})"]
    for name in [p for p in ph.order(mode) if p in rows.index]:
        r, p = rows.loc[name], ph.BY_NAME[name]
        tag = "[RESULT]" if p.group else "[      ]"
        invalid = "" if r["valid"] else " [INVALID]"
        out.append(f"{tag} {name:>20} {_f(r['value']):>15} {p.unit} : time {r['seconds']:.3f} seconds{invalid}")
    for row, tag in (("score", "[SCORE ]"), ("scorex", "[SCOREX]")):
        if row in rows.index:
            invalid = "" if rows.loc[row, "valid"] else " [INVALID]"
            bw, md, total = (_f(rows.loc[k, "value"]) for k in ("bw", "md", row))
            out.append(f"{tag} Bandwidth {bw} GiB/s : IOPS {md} kiops : TOTAL {total}{invalid}")
    return "\n".join(out) + "\n"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))  # io500's u_print_timestamp


def result(part: pd.DataFrame, records: dict, mode: str, procs: int, where: str, version: str = VERSION) -> str:
    """result.txt of one target: io500's ini-style pairs, [run], a section per phase (t_start, exe, its
    [INVALID] reasons as io500's "; ERROR INVALID" lines, score, t_delta, t_end), [SCORE] (and [SCOREX])."""
    rows = part.set_index("phase")
    out = ["[run]", _pair("procs", procs), _pair("version", version), _pair("config-hash", HASH)]
    out += [_pair("result-dir", where), _pair("mode", mode)]
    # (a record of io500 method 4 or older, kept by methods: recorded, has no stonewall-time where none was set)
    stonewall = next(iter(records.values()))["cell"]["io500"].get("stonewall-time", 0)
    out += (
        [f"; ERROR INVALID stonewall-time {stonewall}s != {ph.LIST_STONEWALL}s"]
        if stonewall != ph.LIST_STONEWALL
        else []
    )
    out += [""]
    for name in [p for p in ph.order(mode) if p in records]:
        r, rec = rows.loc[name], records[name]
        dummy = ph.BY_NAME[name].kind == "dummy"  # io500 prints neither exe nor score for the timestamp
        out += ["", f"[{name}]", _pair("t_start", _when(rec["started_at"]))]
        out += [] if dummy else [_pair("exe", rec.get("command", ""))]
        out += [f"; ERROR INVALID {why}" for why in str(r["invalid_reasons"] or "").split("; ") if why]
        out += [] if dummy else [_pair("score", _f(r["value"]))]
        out += [_pair("t_delta", f"{r['seconds']:.4f}"), _pair("t_end", _when(rec["started_at"] + r["seconds"]))]
    for row, head in (("score", "[SCORE]"), ("scorex", "[SCOREX]")):
        if row in rows.index:
            invalid = "" if rows.loc[row, "valid"] else " [INVALID]"
            out += ["", head, _pair("MD", _f(rows.loc["md", "value"])), _pair("BW", _f(rows.loc["bw", "value"]))]
            out += [_pair("SCORE", _f(rows.loc[row, "value"]) + invalid), _pair("hash", HASH)]
    return "\n".join(out) + "\n"


PHASE_LINE = re.compile(
    r"^\[(?:RESULT|      )\] +(?P<phase>\S+) +(?P<value>\S+) (?P<unit>GiB/s|kIOPS) : time (?P<seconds>[0-9.]+) seconds"
    r"(?P<invalid> \[INVALID\])?$"
)
SCORE_LINE = re.compile(
    r"^\[(?P<row>SCORE |SCOREX)\] Bandwidth (?P<bw>\S+) GiB/s : IOPS (?P<md>\S+) kiops : TOTAL (?P<total>\S+)"
    r"(?P<invalid> \[INVALID\])?$"
)


def read_summary(text: str) -> dict:
    """A result_summary.txt (io500's or fsbench's): {"version", "mode", "phases": {phase: {value, unit, seconds,
    valid}}, "score"/"scorex": {bw, md, total, valid}}. Lines io500 prints beside them (ERROR INVALID on a
    terminal) are not in the file; any other line is refused."""
    lines = text.splitlines()
    head = re.fullmatch(r"IO500 version (\S*) \((standard|extended)\)", lines[0])  # a build outside git: none
    if not head:
        raise ValueError(f"not a result_summary.txt: {lines[0]!r}")
    found = {"version": head[1], "mode": head[2], "phases": {}}
    for line in lines[1:]:
        if m := PHASE_LINE.match(line):
            found["phases"][m["phase"]] = {
                "value": float(m["value"]),
                "unit": m["unit"],
                "seconds": float(m["seconds"]),
                "valid": not m["invalid"],
            }
        elif m := SCORE_LINE.match(line):
            row = m["row"].strip().lower()
            found[row] = {k: float(m[k]) for k in ("bw", "md", "total")} | {"valid": not m["invalid"]}
        elif line.strip():
            raise ValueError(f"not a line of result_summary.txt: {line!r}")
    return found


def target_dir(folder, target: str) -> Path:
    """A target's folder of io500's files: its io500.csv name, `/` as `-`."""
    return Path(folder) / str(target).replace("/", "-")


def write(records: list[dict], df: pd.DataFrame, folder) -> list[str]:
    """Each target's result_summary.txt and result.txt under folder/<target> (io500.csv's target names, `/` as
    `-`); the files written."""
    several = {k: len({r["cell"][k] for r in records}) > 1 for k in ("host", "array")}
    written = []
    for name, part in df.groupby("target", sort=False):
        mine = {r["phase"]: r for r in records if label(r, several) == name}
        first = next(iter(mine.values()))
        mode = first["cell"]["io500"].get("mode", "standard")
        procs = first["cell"]["io500"]["processes"] * max(1, len(first.get("hosts") or {}))
        where = target_dir(folder, name)
        where.mkdir(parents=True, exist_ok=True)
        # the method that measured them: an older one where methods: recorded kept a finished cell
        version = f"fsbench-io500-method-{first['cell'].get('method', 1)}"
        (where / "result_summary.txt").write_text(summary(part, mode, version))
        (where / "result.txt").write_text(result(part, mine, mode, procs, str(where), version))
        written += [str(where / "result_summary.txt"), str(where / "result.txt")]
    return written
