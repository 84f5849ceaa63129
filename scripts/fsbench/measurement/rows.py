"""The measurement row: the columns of measurements.csv (docs/contract.md) and the rate as dd prints it (the flags that
doubt a figure: fsbench.toolkit.flags)."""

from fsbench.engines.verify import COLUMNS as VERIFY_COLUMNS
from fsbench.toolkit.latency import COLUMNS as LATENCY_COLUMNS

# Where a measurement was made; what makes two measurements the same test (besides op); the metadata test's own.
WHERE = ["campaign", "host", "array", "target", "fs_type", "workload", "op"]
TEST = ["pattern", "block_size", "direct", "streams", "iodepth", "shared_file"]
META_TEST = ["files", "file_size", "dirs"]
# The columns of measurements.csv and baselines.csv, in order (docs/contract.md).
COLUMNS = [
    *WHERE,
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
    *VERIFY_COLUMNS,  # io.verify's reads only (fsbench.engines.verify)
    "flags",
]


def rows_of(record: dict) -> list[dict]:
    """The rows a step's record holds: its `rows` (a mix's read and write, the metadata test's phases, none for
    a mix's layout), else its one `row`."""
    return record["rows"] if "rows" in record else [record["row"]]


def rate(nbytes: int, seconds: float) -> float:
    """MB/s as dd prints it: bytes / seconds / 10^6."""
    return nbytes / seconds / 1e6 if seconds > 0 else float("nan")
