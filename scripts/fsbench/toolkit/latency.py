"""Per-operation latency: a log-bucketed histogram of fixed size, and the percentiles read from it.

Values are nanoseconds. Below 2**SUB_BITS ns each value has its own bucket; above, each power of two is cut
into 2**SUB_BITS equal buckets (HdrHistogram's layout), so a bucket is at most 1/2**SUB_BITS of its lower
edge wide and a percentile, reported as its bucket's midpoint, is within half of that: MAX_RELATIVE_ERROR.
Memory is bounded (BUCKETS counters, whatever the run's length) and recording a value touches one counter:
nothing grows per operation. Histograms of several streams (or a tool's own bins, e.g. fio's json+) merge by
adding counters.
"""

import math
from array import array

SUB_BITS = 5
SUB = 1 << SUB_BITS
BUCKETS = (64 - SUB_BITS + 1) * SUB  # every value below 2**64 ns
MAX_RELATIVE_ERROR = 1 / (2 * SUB)  # 1.6 %
PERCENTILES = {"lat_p50_us": 50.0, "lat_p90_us": 90.0, "lat_p99_us": 99.0, "lat_p999_us": 99.9}
COLUMNS = ["lat_mean_us", *PERCENTILES, "lat_max_us"]


def bucket(ns: int) -> int:
    """The bucket of a value: exact below SUB, else SUB buckets per power of two."""
    if ns < SUB:
        return max(ns, 0)
    shift = ns.bit_length() - SUB_BITS - 1
    return ((shift + 1) << SUB_BITS) + (ns >> shift) - SUB


def bounds(index: int) -> tuple[int, int]:
    """The values [low, high) bucket `index` holds."""
    if index < SUB:
        return index, index + 1
    shift = (index >> SUB_BITS) - 1
    low = ((index & (SUB - 1)) + SUB) << shift
    return low, low + (1 << shift)


class Histogram:
    """Latencies of one stream (or, merged, of many): counts per bucket, and the exact count, sum and max."""

    __slots__ = ("counts", "count", "total_ns", "max_ns")

    def __init__(self):
        self.counts = array("Q", bytes(8 * BUCKETS))
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

    def record(self, ns: int) -> None:
        self.counts[bucket(ns)] += 1
        self.count += 1
        self.total_ns += ns
        if ns > self.max_ns:
            self.max_ns = ns

    def add(self, ns: int, times: int) -> None:
        """`times` operations that each took about `ns` (a bin of another tool's histogram)."""
        self.counts[bucket(ns)] += times
        self.count += times
        self.total_ns += ns * times
        self.max_ns = max(self.max_ns, ns)

    @classmethod
    def from_bins(cls, bins: dict, mean_ns: float, max_ns: int) -> "Histogram":
        """Another tool's histogram, e.g. fio's json+ `clat_ns.bins` ({value_ns: count}), with its exact mean
        and max; each bin's operations land in the bucket of its value."""
        hist = cls()
        for value, n in bins.items():
            hist.add(int(value), n)
        hist.total_ns, hist.max_ns = round(mean_ns * hist.count), max(hist.max_ns, int(max_ns))
        return hist

    def merge(self, other: "Histogram") -> "Histogram":
        for i, n in enumerate(other.counts):
            if n:
                self.counts[i] += n
        self.count += other.count
        self.total_ns += other.total_ns
        self.max_ns = max(self.max_ns, other.max_ns)
        return self

    def percentile(self, q: float) -> float:
        """The value below which q % of the operations fall, in ns (the midpoint of its bucket, never above
        the largest value seen)."""
        if not self.count:
            return float("nan")
        rank = max(1, math.ceil(self.count * q / 100))  # the ceil(q % of count)-th smallest value
        seen = 0
        for i, n in enumerate(self.counts):
            seen += n
            if seen >= rank:
                low, high = bounds(i)
                return min((low + high - 1) / 2, self.max_ns)
        return float(self.max_ns)

    def summary(self) -> dict:
        """The latency columns of measurements.csv, in µs (empty, i.e. NaN, without operations)."""
        if not self.count:
            return dict.fromkeys(COLUMNS, float("nan"))
        found = {"lat_mean_us": self.total_ns / self.count / 1e3}
        found |= {name: self.percentile(q) / 1e3 for name, q in PERCENTILES.items()}
        return found | {"lat_max_us": self.max_ns / 1e3}

    def as_record(self) -> dict:
        """For a JSON record: the non-empty buckets only."""
        return {
            "buckets": {str(i): n for i, n in enumerate(self.counts) if n},
            "count": self.count,
            "total_ns": self.total_ns,
            "max_ns": self.max_ns,
        }

    @classmethod
    def from_record(cls, record: dict) -> "Histogram":
        hist = cls()
        for i, n in record["buckets"].items():
            hist.counts[int(i)] = n
        hist.count, hist.total_ns, hist.max_ns = record["count"], record["total_ns"], record["max_ns"]
        return hist
