"""Which figures are valid: a measurement is valid unless one of its flags says the figure is not of the storage
it names (docs/contract.md "Valid figures"); the other flags warn and leave it valid.

measurements.csv gets `valid` and `invalid_reasons` from the flags (in aggregate, after flag_above_raw), so a
record measured before these columns existed is judged the same way without being measured again. A cell (the
repeats of one target and test) is valid only when every repeat is: a verdict resting on it would otherwise
rest in part on a figure known to be wrong, and more repeats cannot undo that.
"""

import pandas as pd

from fsbench.toolkit import flags as flag_names
from fsbench.toolkit.flags import INVALIDATING

NOT_COMPARABLE = "not comparable"


def invalid_reasons(flags) -> list[str]:
    """The invalidating flags among `flags` (a flags value of measurements.csv or summary.csv), in their order."""
    return [f for f in flag_names.names(flags) if f in INVALIDATING]


def with_validity(measurements: pd.DataFrame) -> pd.DataFrame:
    """`measurements` with `valid` (bool) and `invalid_reasons` (the invalidating flags, `;`-separated) last."""
    flags = measurements["flags"] if "flags" in measurements else pd.Series("", index=measurements.index)
    reasons = flags.map(lambda f: flag_names.join(invalid_reasons(f))).astype(object)
    out = measurements.drop(columns=["valid", "invalid_reasons"], errors="ignore")
    return out.assign(valid=reasons.eq(""), invalid_reasons=reasons)


def side(rows: pd.DataFrame) -> tuple[bool, str]:
    """(every repeat valid, why not: 'short in 2 of 3, cached in 1 of 3', or 'short' where all carry it)."""
    flags = rows["flags"] if "flags" in rows else pd.Series(dtype=object)
    per_repeat = [invalid_reasons(f) for f in flags]
    counts: dict[str, int] = {}
    for reasons in per_repeat:
        for reason in dict.fromkeys(reasons):
            counts[reason] = counts.get(reason, 0) + 1
    n = len(per_repeat)
    said = ", ".join(r if k == n else f"{r} in {k} of {n}" for r, k in counts.items())
    return not counts, said


def cell_reasons(flags) -> list[str]:
    """The invalidating flags of a summary cell's `flags` ('short;cached (1 of 3)'), with their counts:
    ['short', 'cached in 1 of 3']."""
    found = [f for f in flag_names.parse(flags) if flag_names.name(f) in INVALIDATING]
    return [f.replace(" (", " in ").removesuffix(")") for f in found]
