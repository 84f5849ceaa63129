"""The change-point method judged on synthetic series (seeded), and what `history changes` says about a change."""

import numpy as np
import pandas as pd

from fsbench.history import changes
from fsbench.history.key import KEY_COLUMNS

SEEDS = range(100)


def noisy(rng, n, level=100.0, noise=0.03):
    return level * (1 + noise * rng.standard_normal(n))


def test_a_10_percent_step_at_3_percent_noise_is_found_within_3_runs_after_it():
    """20 runs, then the step: once 3 runs after it are in, it is found, at the right run, in >= 90 % of seeds."""
    found = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        values = np.r_[noisy(rng, 20), noisy(rng, 3, level=110.0)]
        found += any(c.index == 20 for c in changes.find(values))
    assert found >= 90, f"found in {found} of 100"


def test_flat_series_of_30_runs_raise_at_most_5_percent_false_alarms():
    alarms = sum(bool(changes.find(noisy(np.random.default_rng(1000 + seed), 30))) for seed in SEEDS)
    assert alarms <= 5, f"{alarms} of 100 flat series had a change point"


def test_one_outlying_run_is_not_a_step():
    """A run 30 % off in a flat series: never a change point at it, and no more alarms than flat series have."""
    alarms = 0
    for seed in SEEDS:
        rng = np.random.default_rng(2000 + seed)
        values = noisy(rng, 30)
        at = 5 + seed % 20
        values[at] *= 0.7 if seed % 2 else 1.3
        found = changes.find(values)
        assert not [c.index for c in found if c.index in (at, at + 1)], f"seed {seed}: the outlier made a step"
        alarms += bool(found)
    assert alarms <= 5


def test_too_few_runs_are_no_series_to_judge():
    assert changes.find([100, 50]) == [] and changes.find([100, 100, 100, 50, 50]) == []


def points(values, metric="mb_s", contexts=None, campaigns=None):
    """`history series` points of one series: a run per value."""
    n = len(values)
    campaigns = campaigns or [f"run{i}" for i in range(n)]
    base = {c: None for c in KEY_COLUMNS} | {"host": "h", "array": "demo", "target": "ext4", "op": "write"}
    return pd.DataFrame(
        [
            base
            | {
                "series": "s1",
                "metric": metric,
                "campaign": campaigns[i],
                "started": f"2026-{i + 1:02d}-01T00:00:00+00:00",
                "run": f"{campaigns[i]} 2026-{i + 1:02d}-01T00:00:00+00:00",
                "median": v,
                "low": v,
                "high": v,
                "n": 3,
                "context": (contexts or [{}] * n)[i],
            }
            for i, v in enumerate(values)
        ]
    )


def test_a_change_names_its_runs_medians_verdict_and_what_changed_in_the_context():
    ctx = [{"campaign": f"run{i}", "kernel": "6.8.0" if i < 4 else "6.9.1", "firmware": "2.1"} for i in range(8)]
    found = changes.analyse(points([100, 101, 99, 100, 80, 81, 79, 80], contexts=ctx), marks={})
    assert len(found) == 1
    c = found.iloc[0]
    assert c["before_run"] == "run3 2026-04-01T00:00:00+00:00" and c["after_run"] == "run4 2026-05-01T00:00:00+00:00"
    assert (c["median_before"], c["median_after"]) == (100, 80) and c["ratio"] == 0.8
    assert c["verdict"] == "regression" and c["p_value"] < 0.01
    assert c["context_changed"] == "kernel 6.8.0 → 6.9.1"
    assert list(found.columns[-9:]) == changes.COLUMNS


def test_latency_that_drops_is_an_improvement():
    found = changes.analyse(points([100, 101, 99, 100, 80, 81, 79, 80], metric="lat_p50_us"), marks={})
    assert list(found["verdict"]) == ["improvement"]


def test_a_marked_run_starts_a_new_baseline():
    values = [100, 101, 99, 100, 80, 81, 79, 80]
    assert changes.analyse(points(values), marks={"run4": "new firmware"}).empty
    # a later step is still found, judged against the new baseline only
    later = changes.analyse(points(values + [60, 61, 59]), marks={"run4": "new firmware"})
    assert list(later["after_run"].str.split().str[0]) == ["run8"]
