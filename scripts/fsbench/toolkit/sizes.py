"""Byte sizes and durations as people write them: 512KiB, 1MiB, 4M, 20G, 1048576; 60s, 2m, 500ms, 90.

Size units are binary throughout (M = MiB, as dd's bs=1M), so a campaign written
with dd habits means what it says.
"""

import re

_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGTP]?)(i?B)?\s*$", re.IGNORECASE)

ALLOWED = "a whole number of bytes, or one with a binary unit: 512KiB, 1MiB, 4M, 1GiB, 20G"
_SECONDS = {"ms": 0.001, "s": 1, "": 1, "m": 60, "h": 3600}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", re.IGNORECASE)
DURATION_ALLOWED = "a time above zero: 60s, 2m, 1h, 500ms, or a number of seconds"


def parse_size(value) -> int:
    """Bytes in `value`; ValueError (saying what is allowed) for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"not a size; allowed: {ALLOWED}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and (m := _SIZE.match(value)):
        unit = m.group(2).upper()
        if m.group(3) and not unit and m.group(3).lower() == "ib":
            raise ValueError(f"not a size; allowed: {ALLOWED}")
        n = int(m.group(1)) * 1024 ** _UNITS[unit]
    else:
        raise ValueError(f"not a size; allowed: {ALLOWED}")
    if n <= 0:
        raise ValueError("must be greater than zero")
    return n


def format_size(n: int) -> str:
    """The shortest exact binary spelling: 1048576 -> '1MiB', 1000 -> '1000B'."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        scale = 1024 ** ("KMGTP".index(unit[0]) + 1)
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return f"{n}B"


def parse_duration(value) -> float:
    """Seconds in `value` (60s, 2m, 500ms, 90, 1.5); ValueError (saying what is allowed) for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a duration; allowed: {DURATION_ALLOWED}")
    if isinstance(value, str):
        if not (m := _DURATION.match(value)):
            raise ValueError(f"not a duration; allowed: {DURATION_ALLOWED}")
        value = float(m.group(1)) * _SECONDS[(m.group(2) or "").lower()]
    if not 0 < value < float("inf"):
        raise ValueError(f"not a duration; allowed: {DURATION_ALLOWED}")
    return float(value)
