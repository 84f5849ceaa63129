"""What differs between two runs' provenance.json (and the settings their measurements.csv hold): the set-up
that may explain a different figure, apart from what tells any two runs apart (a filesystem's identity, dates)."""

import re

import pandas as pd

# Keys whose values tell one run from another however alike the two are: a filesystem's identity and dates.
PER_RUN = re.compile(
    r"(^|\.)(uuid|loop_backing_file|Filesystem UUID|Directory Hash Seed|Filesystem created|Last mount time|"
    r"Last write time|Last checked|Lifetime writes|Checksum|Free blocks|Free inodes|Journal sequence|Mount count|"
    r"kernel_version)$"
)


def _text_fields(text: str) -> dict[str, str] | None:
    """A tool's read-back as fields: 'Name:  value' lines (dumpe2fs, btrfs) or 'section = a=1 b=2, c=3' lines
    (xfs_info). None for text of one line."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    out, section = {}, ""
    for i, line in enumerate(lines):
        named = re.match(r"^([^:=]+?):\s*(.*)$", line)
        if named:
            out[named.group(1).strip()] = named.group(2).strip()
            continue
        head = re.match(r"^([^\s=][^=]*?)\s*=", line)
        if head:
            section = head.group(1).strip()
        pairs = re.findall(r"([\w.-]+)=([^\s,]+)", line)
        for name, value in pairs:
            out[f"{section}.{name}" if section and name != section else name] = value
        if not named and not pairs and line.strip():
            out[f"line {i + 1}"] = line.strip()
    return out


def flatten(value, prefix: str = "") -> dict[str, str]:
    """provenance.json as dotted keys: 'arrays.demo.targets.ext4.mount_options_read_back' -> 'rw,relatime';
    lists of words as one value, lists of objects by index, multi-line read-backs by field."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out |= flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        for i, v in enumerate(value):
            out |= flatten(v, f"{prefix}[{i}]")
    elif isinstance(value, list):
        out[prefix] = " ".join(map(str, value))
    elif isinstance(value, str) and (fields := _text_fields(value)) is not None:
        out |= {f"{prefix}.{k}": v for k, v in fields.items()}
    else:
        out[prefix] = "" if value is None else str(value)
    return out


def provenance_diff(old: dict, new: dict) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(key, old value, new value) for every key whose value differs (absent: '(none)'), and apart from those
    the keys that differ between any two runs (PER_RUN: UUIDs, dates)."""
    a, b = flatten(old), flatten(new)
    keys = list(dict.fromkeys([*a, *b]))
    differ = [k for k in keys if a.get(k) != b.get(k)]
    per_run = [k for k in differ if PER_RUN.search(k)]
    return [(k, a.get(k, "(none)"), b.get(k, "(none)")) for k in differ if k not in per_run], per_run


# What of a run's settings measurements.csv holds, where provenance.json may not.
SETTINGS = ["engine", "cache", "bytes", "data"]


def settings(measurements: pd.DataFrame) -> dict:
    """The run-wide settings seen in measurements.csv: each column's values, as provenance-like keys."""
    return {
        "measurements": {
            c: " ".join(map(str, pd.unique(measurements[c].dropna()))) for c in SETTINGS if c in measurements
        }
    }
