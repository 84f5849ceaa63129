"""measurements.csv from the per-measurement records, always rebuilt whole."""

import pandas as pd

from .records import COLUMNS, read_json
from .stats import flag_above_raw

# Beyond the contract's columns: what made each figure, and where its full record is.
EXTRA = ["command", "record"]


def measurements(paths: list[str]) -> pd.DataFrame:
    rows = []
    for path in paths:
        rec = read_json(path)
        rows.append(rec["row"] | {"command": rec["command"], "record": str(path)})
    df = pd.DataFrame(rows, columns=COLUMNS + EXTRA)
    return flag_above_raw(df)
