"""The measurement row: the columns of measurements.csv (docs/contract.md), the rate as dd prints it, and the flags
that doubt a figure."""

import math

from fsbench.storage.telemetry import cache_hit
from fsbench.toolkit.latency import COLUMNS as LATENCY_COLUMNS

# Where a measurement was made; what makes two measurements the same test (besides op); the metadata test's own.
PLACE = ["campaign", "host", "array", "target", "fs_type", "workload", "op"]
TEST = ["pattern", "block_size", "direct", "streams", "iodepth", "shared_file"]
META_TEST = ["files", "file_size", "dirs"]
# The columns of measurements.csv and baselines.csv, in order (docs/contract.md).
COLUMNS = [
    *PLACE,
    *TEST,
    *META_TEST,
    "rep",
    "bytes",
    "seconds",
    "mb_s",
    "seconds_durable",
    "mb_s_durable",
    "engine",
    "cache",
    "cached_before",
    "started_at",
    "ops",
    "iops",
    *LATENCY_COLUMNS,
    "cpu_s_per_gb",
    "device_bytes",
    "write_amplification",
    "flags",
]

# Figures shorter than this are dominated by start-up and caches (IO500 wants minutes).
SHORT_SECONDS = 1.0
# A read that begins with more than this fraction of its file cached is not a cold read.
CACHED_LIMIT = 0.02


def rate(nbytes: int, seconds: float) -> float:
    """MB/s as dd prints it: bytes / seconds / 10^6."""
    return nbytes / seconds / 1e6 if seconds > 0 else float("nan")


def flags_for(row: dict, expected_bytes: int | None, streams: list[dict] = ()) -> str:
    """The doubts about one figure, `;`-separated (empty when there are none). `expected_bytes` None: as many
    as the time allowed (a time-based write); `streams` are its streams' results, which say what stopped them."""
    flags = []
    if expected_bytes is not None and row["bytes"] != expected_bytes:
        flags.append("short-transfer")
    if any(s.get("stopped_by") == "size" for s in streams):
        flags.append("size-before-runtime")
    if min(row["seconds"], row["seconds_durable"]) < SHORT_SECONDS:
        flags.append("short")
    if row["op"] == "read" and row["cached_before"] > CACHED_LIMIT:
        flags.append("cached")
    if cache_hit(row["op"], row["bytes"], row.get("device_bytes", math.nan)):
        flags.append("cache-hit")
    return ";".join(flags)


def with_flags(flags: str, more: list[str]) -> str:
    """`flags` (`;`-separated) with `more` appended."""
    return ";".join([f for f in flags.split(";") if f] + more)
