"""Which figures are valid: a measurement is valid unless one of its flags says the figure is not of the storage
it names (docs/contract.md "Valid figures"); the other flags warn and leave it valid.

measurements.csv gets `valid` and `invalid_reasons` from the flags (in aggregate, after flag_above_raw), so a
record measured before these columns existed is judged the same way without being measured again. A cell (the
repeats of one target and test) is valid only when every repeat is: a verdict resting on it would otherwise
rest in part on a figure known to be wrong, and more repeats cannot undo that.
"""

import pandas as pd

# Flags that say the figure measured something other than the storage under test.
INVALIDATING = (
    "short",  # under a second: start-up, page cache and timer granularity dominate
    "cached",  # a read that began with its file in the page cache is not a cold read
    "cache-hit",  # the devices moved less than half of what was read: a cache or compression answered
    "short-transfer",  # fewer bytes moved than the test asks: a different test
    "not-steady",  # a time-based run still changing at its end: the figure depends on when it stopped
)
# Flags that say something worth knowing while the figure still stands for what it names.
WARNING = (
    "above-raw",  # a judgement against raw's repeats (which drift and may be invalid), and on mb_s, which for a
    # buffered write is the page cache by design; the durable rate compared is a separate figure
    "drop",  # the rate fell for a while: that is how this storage behaved (an SLC cache running out)
    "size-before-runtime",  # a time-based write that finished io.size early: still a whole, sized figure
    "straggler",  # one host of an all-hosts cell was slow: the cell's figure is what all hosts did
)
NOT_COMPARABLE = "not comparable"


def _names(flags) -> list[str]:
    """'short;cached (1 of 3)' -> ['short', 'cached']; empty, NaN -> []."""
    if not isinstance(flags, str):
        return []
    return [f.strip().split(" (")[0] for f in flags.split(";") if f.strip()]


def invalid_reasons(flags) -> list[str]:
    """The invalidating flags among `flags` (a flags value of measurements.csv or summary.csv), in their order."""
    return [f for f in _names(flags) if f in INVALIDATING]


def with_validity(measurements: pd.DataFrame) -> pd.DataFrame:
    """`measurements` with `valid` (bool) and `invalid_reasons` (the invalidating flags, `;`-separated) last."""
    flags = measurements["flags"] if "flags" in measurements else pd.Series("", index=measurements.index)
    reasons = flags.map(lambda f: ";".join(invalid_reasons(f))).astype(object)
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
    if not isinstance(flags, str):
        return []
    found = [f.strip() for f in flags.split(";") if f.strip().split(" (")[0] in INVALIDATING]
    return [f.replace(" (", " in ").removesuffix(")") for f in found]
