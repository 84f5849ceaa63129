"""The latency histogram: its bucket error as stated, against exact percentiles of known samples."""

import math
import random

import pytest

from fsbench.toolkit.latency import BUCKETS, MAX_RELATIVE_ERROR, PERCENTILES, SUB, Histogram, bounds, bucket


def exact(values: list[int], q: float) -> int:
    """The ceil(q % of n)-th smallest value: the same rank the histogram reports."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * q / 100)) - 1]


def test_every_value_falls_in_the_bucket_whose_bounds_hold_it():
    rng = random.Random(1)
    samples = (
        list(range(200))
        + [2**k + d for k in range(5, 64) for d in (-1, 0, 1)]
        + [rng.getrandbits(40) for _ in range(2000)]
    )
    for ns in samples:
        if ns >= 2**64:
            continue
        low, high = bounds(bucket(ns))
        assert low <= ns < high, ns
        assert 0 <= bucket(ns) < BUCKETS
        assert (high - low) <= max(1, low / SUB)  # no bucket wider than 1/SUB of its lower edge
    assert bucket(2**64 - 1) == BUCKETS - 1


@pytest.mark.parametrize("sample", ["lognormal", "bimodal", "uniform"])
def test_percentiles_are_within_the_stated_error_of_the_exact_ones(sample):
    rng = random.Random(42)
    if sample == "lognormal":  # a storage-like latency: ~40 µs median, a long tail
        values = [int(rng.lognormvariate(math.log(40_000), 0.8)) for _ in range(50_000)]
    elif sample == "bimodal":  # cache hits and device reads
        values = [
            int(rng.gauss(3_000, 300)) if rng.random() < 0.9 else int(rng.gauss(900_000, 50_000)) for _ in range(20_000)
        ]
    else:
        values = [rng.randrange(1, 10**7) for _ in range(20_000)]
    hist = Histogram()
    for v in values:
        hist.record(v)
    for q in (*PERCENTILES.values(), 0.1, 25.0, 100.0):
        want, got = exact(values, q), hist.percentile(q)
        assert abs(got - want) <= MAX_RELATIVE_ERROR * want + 0.5, (q, want, got)
    summary = hist.summary()
    assert summary["lat_mean_us"] == pytest.approx(sum(values) / len(values) / 1e3)
    assert summary["lat_max_us"] == max(values) / 1e3
    ordered = [summary[k] for k in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us")]
    assert ordered == sorted(ordered)


def test_small_values_are_exact():
    hist = Histogram()
    for v in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10):
        hist.record(v)
    assert [hist.percentile(q) for q in (10, 50, 90, 100)] == [1, 5, 9, 10]


def test_streams_merge_into_the_histogram_of_all_their_operations():
    rng = random.Random(7)
    parts = [[int(rng.expovariate(1 / 50_000)) for _ in range(3000)] for _ in range(4)]
    merged, whole = Histogram(), Histogram()
    for part in parts:
        one = Histogram()
        for v in part:
            one.record(v)
            whole.record(v)
        merged.merge(Histogram.from_record(one.as_record()))  # as kept in a record and read back
    assert merged.counts == whole.counts and merged.summary() == whole.summary()
    assert merged.count == sum(len(p) for p in parts)


def test_no_operations_give_empty_columns():
    assert all(math.isnan(v) for v in Histogram().summary().values())


def test_memory_does_not_grow_with_the_operations():
    hist = Histogram()
    before = len(hist.counts)
    for v in range(0, 10**9, 10**4):
        hist.record(v)
    assert len(hist.counts) == before == BUCKETS and hist.count == 10**5
