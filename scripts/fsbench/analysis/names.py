"""How a reader names what the tables, verdicts and plots show: a metric, a p-value, a place (campaign, host,
array), a baseline, and the verdict that is none."""

import pandas as pd

UNDECIDED = "no clear difference"

# What each comparison's figure is, by (op, metric) of comparisons.csv.
METRIC_NAMES = {("write", "mb_s_durable"): "durable write", ("write", "mb_s"): "write", ("read", "mb_s"): "read"}


def metric_name(op, metric) -> str:
    """'durable write', 'read', 'read IOPS'."""
    if metric == "iops":
        return f"{op_name(op)} IOPS"
    return METRIC_NAMES.get((op, metric), f"{op_name(op)} {metric}")


def p_text(p) -> str:
    return "–" if pd.isna(p) else "<0.001" if p < 0.001 else f"{p:.3f}"


def op_name(op) -> str:
    return "op?" if pd.isna(op) or str(op).strip() == "" else str(op)  # a dd log that says neither write nor read


def several(frame: pd.DataFrame, column: str) -> bool:
    return column in frame and frame[column].nunique(dropna=False) > 1


def place_name(keys: dict, frame: pd.DataFrame) -> str:
    """'array', or 'campaign / host / array' with each part that tells sections of `frame` apart."""
    parts = [keys[c] for c in ("campaign", "host") if c in keys and several(frame, c)]
    return " / ".join(str(p) for p in [*parts, keys["array"]])


def places(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows) per campaign, host and array in `frame`, in its order; the host is named only when there
    is more than one."""
    by = [c for c in ("campaign", "host", "array") if c in frame]
    return [
        (place_name(dict(zip(by, key, strict=True)), frame), part)
        for key, part in frame.groupby(by, sort=False, dropna=False)
    ]


def baseline_name(name, array, several_arrays: bool, host=None) -> str:
    """A baseline as a reader knows it: its config name, plus the host (given where it has several) and the
    array where that adds anything."""
    if host is not None:
        return f"{name} / {host} / {array}"
    return f"{name} / {array}" if several_arrays or str(array) != str(name) else str(name)


def baseline_parts(rows: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows) per baseline, and within one per host (where it has several) and array."""
    out = []
    for name, part in rows.groupby("campaign", sort=False, dropna=False):
        hosts = several(part, "host")
        by = ["host", "array"] if hosts else ["array"]
        several_arrays = part["array"].nunique(dropna=False) > 1
        for key, rows_ in part.groupby(by, sort=False, dropna=False):
            host, array = key if hosts else (None, key[0])
            out.append((baseline_name(name, array, several_arrays, host), rows_))
    return out
