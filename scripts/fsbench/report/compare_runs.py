"""Two runs side by side (`python -m fsbench compare OLD NEW`, and compare_to in a campaign): each cell both
measured, NEW against OLD with the test of fsbench.analysis.compare, and what differs in their provenance."""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fsbench.analysis.compare import COLUMNS, RUN_CELL, compare, metrics, order, with_tests
from fsbench.analysis.provenance_diff import provenance_diff, settings
from fsbench.analysis.stats import TEST, is_metadata, sort_rows
from fsbench.report.document import Heading, Para, Table, blocks_markdown
from fsbench.report.summary import verdict_blocks


def _same(value) -> str:
    """A cell's value as both runs' CSVs agree on it: 1048576 = 1048576.0, True = 'True', NaN = ''."""
    if pd.isna(value):
        return ""
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else str(number)


def _by_cell(frame: pd.DataFrame, key: list[str]) -> dict[tuple, pd.DataFrame]:
    cells = [tuple(_same(v) for v in row) for row in frame[key].itertuples(index=False)]
    return {k: rows.drop(columns="_cell") for k, rows in frame.assign(_cell=cells).groupby("_cell", sort=False)}


def compare_runs(old: pd.DataFrame, new: pd.DataFrame, old_name: str, new_name: str) -> pd.DataFrame:
    """Per cell both runs measured (RUN_CELL, with host where either run has several), new (a) against old (b)."""
    old, new = old[~is_metadata(old)], new[~is_metadata(new)]  # block I/O cells only
    if old.empty or new.empty:
        return pd.DataFrame(columns=COLUMNS)
    old, new = with_tests(old), with_tests(new)
    hosts = any("host" in f and f["host"].nunique(dropna=False) > 1 for f in (old, new))
    key = ["host", *RUN_CELL] if hosts else RUN_CELL
    before, after = _by_cell(old, key), _by_cell(new, key)
    out = []
    for cell in (k for k in after if k in before):
        a, b = after[cell], before[cell]
        # IOPS judges random and mixed cells only, as within a campaign: for sequential ones it restates the rate.
        for metric in metrics(a["op"].iloc[0], a, b, iops=a["pattern"].iloc[0] != "seq"):
            row = {c: a[c].iloc[0] for c in key} | {"metric": metric, "vs": "run"}
            out.append(row | compare(a, b, metric, new_name, old_name))
    frame = pd.DataFrame(out, columns=COLUMNS)
    if frame.empty:
        return frame
    return order(sort_rows(frame, [*(["host"] if hosts else []), "array", "target", "op", *TEST]))


def locate(path) -> tuple[Path, Path]:
    """(measurements.csv, provenance.json beside it) of a result folder or a measurements.csv file."""
    path = Path(path)
    csv = path / "measurements.csv" if path.is_dir() else path
    if not csv.is_file():
        raise FileNotFoundError(f"{path}: no measurements.csv there")
    return csv, csv.parent / "provenance.json"


def read_provenance(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def compare_blocks(result: pd.DataFrame, changes, per_run, old_path, new_path, missing=()) -> list:
    """The output of `fsbench compare` as blocks: the verdicts, then what differs in provenance."""
    blocks: list = [Heading(1, f"fsbench compare: new ({new_path}) against old ({old_path})")]
    if result.empty:
        blocks.append(
            Para(
                "The two runs share no cell (array, target, fs_type, op, pattern, block size, direct, "
                "streams): nothing to compare."
            )
        )
    else:
        blocks += verdict_blocks(result, source="the CSV beside this file")
    blocks.append(Heading(2, "What differs in provenance"))
    for name in missing:
        blocks.append(Para(f"{name} has no provenance.json beside it: only measurements.csv's settings are compared."))
    if changes:
        blocks.append(Table(["key", "old", "new"], [list(c) for c in changes], prose=True))
    else:
        blocks.append(Para("Nothing that describes the set-up differs."))
    if per_run:
        blocks.append(Para(f"Also different, as between any two runs: {', '.join(per_run)}."))
    return blocks


def run(old_path, new_path, out=None) -> tuple[str, Path, Path]:
    """Compare two runs; write the text (Markdown) and the comparisons (CSV). (text, markdown path, csv path)."""
    (old_csv, old_prov), (new_csv, new_prov) = locate(old_path), locate(new_path)
    old, new = pd.read_csv(old_csv), pd.read_csv(new_csv)
    result = compare_runs(old, new, "old", "new")
    prov = {str(path): read_provenance(p) for path, p in ((old_path, old_prov), (new_path, new_prov))}
    missing = [path for path, p in prov.items() if p is None]
    changes, per_run = provenance_diff(
        (read_provenance(old_prov) or {}) | settings(old), (read_provenance(new_prov) or {}) | settings(new)
    )
    text = blocks_markdown(compare_blocks(result, changes, per_run, old_path, new_path, missing))
    base = Path(out) if out else new_csv.parent / "compare"
    md, csv = base.with_suffix(".md"), base.with_suffix(".csv")
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(text)
    result.to_csv(csv, index=False)
    return text, md, csv
