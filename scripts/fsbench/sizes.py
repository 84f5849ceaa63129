"""Byte sizes as people write them: 512KiB, 1MiB, 4M, 20G, 1048576.

Units are binary throughout (M = MiB, as dd's bs=1M), so a campaign written
with dd habits means what it says.
"""

import re

_UNITS = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGTP]?)(i?B)?\s*$", re.IGNORECASE)

ALLOWED = "a whole number of bytes, or one with a binary unit: 512KiB, 1MiB, 4M, 1GiB, 20G"


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
