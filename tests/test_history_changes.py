"""The change-point method judged on synthetic series (seeded), and what `history changes` says about a change.

Every threshold here is checked on seeds never used to choose one: changes.py's were chosen on benchmarks/history.py's
development seeds (--develop); these start at 50,000 (issue 29). Each count's threshold comes from a target or a bound
(issue 40: benchmarks/history.py's targets and best_at_its_run), less the room a method exactly at it has on as many
seeds (at_least, at_most), never from where the last result landed."""

import functools
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pandas as pd

from fsbench.history import changes, key, store
from fsbench.history.key import KEY_COLUMNS

from conftest import REPO, row

SEEDS = range(50_000, 50_100)  # never used to choose a threshold


@functools.cache
def bench():
    """benchmarks/history.py: its targets, its series model and its bound."""
    spec = importlib.util.spec_from_file_location("bench_history", REPO / "benchmarks" / "history.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def at_least(rate: float, n: int) -> int:
    """The fewest of n a method that finds `rate` of them shows on n seeds, but for 1 in 40: its count less two
    standard errors (the seeds are fixed, so a pass or a failure is the same every time)."""
    return int(np.ceil(n * rate - 2 * np.sqrt(n * rate * (1 - rate))))


def at_most(rate: float, n: int) -> int:
    """The most of n a method that alarms at `rate` shows on n seeds, but for 1 in 40."""
    return int(np.floor(n * rate + 2 * np.sqrt(n * rate * (1 - rate))))


def noisy(rng, n, level=100.0, noise=0.03):
    return level * (1 + noise * rng.standard_normal(n))


def test_a_10_percent_step_at_a_random_run_is_found_there_near_the_bound():
    """23 runs of 3 repeats at 3 % nightly noise, a 10 % step at a random run from 3 to 20 (every run a confirmed
    change may sit at): confirmed at its run within 2 points of the best any rule can do under that constraint,
    and at its run or one off in 95 % (issue 40's targets), on 100 seeds."""
    b = bench()
    exact = near = 0
    for seed in SEEDS:
        e, n = b.ten_percent_alone(np.random.default_rng(seed), 1)
        exact, near = exact + e, near + n
    best = b.best_at_its_run(1.1, None)
    assert exact >= at_least(best - b.NEAR_BOUND, 100), f"found at its run in {exact} of 100 (best {best:.1%})"
    assert near >= at_least(b.ONE_OFF_TARGET, 100), f"found at its run or one off in {near} of 100"


def test_the_best_a_rule_not_knowing_the_levels_can_do_lies_between_chance_and_the_bound():
    """best_at_its_run with `levels` False (the rule knows the step's size and the noise, not the level): under the
    rule that knows both levels, far above chance (1 run in 18), every 3x step found, no 0.01 % one told; with
    `size` False too, under it."""
    b = bench()
    known, estimated = b.best_at_its_run(1.1, None, n=20_000), b.best_at_its_run(1.1, None, n=20_000, levels=False)
    assert 0.8 < estimated < known, (estimated, known)
    blind = b.best_at_its_run(1.1, None, n=20_000, levels=False, size=False)  # nor the step's size
    assert 0.8 < blind < estimated, (blind, estimated)
    assert b.best_at_its_run(3.0, None, n=20_000, levels=False) > 0.999
    assert b.best_at_its_run(1.0001, None, n=20_000, levels=False) < 0.1


def test_a_3x_step_is_suspected_from_the_first_run_after_it():
    """Three runs at 200 MB/s, then 60 MB/s (~1 % noise): suspected from the first slow run; confirmed once three
    slow runs are in. And 20 flat runs then one at a third: suspected in every seed."""
    rng = np.random.default_rng(50_000)
    fast, slow = noisy(rng, 3, 200, 0.01), noisy(rng, 3, 60, 0.01)
    for after in (1, 2):
        found = changes.find(np.r_[fast, slow[:after]])
        assert [(c.index, c.confirmed) for c in found] == [(3, False)], found
    assert [(c.index, c.confirmed) for c in changes.find(np.r_[fast, slow])] == [(3, True)]
    others = 0  # a flat series judged alone may be cut by chance (at FDR 5 %), never at the fresh step
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        values = np.r_[noisy(rng, 20), noisy(rng, 1, level=100 / 3)]
        found = [(c.index, c.confirmed) for c in changes.find(values)]
        assert found[-1] == (20, False), seed
        others += len(found) > 1
    assert others <= at_most(0.05, 100)


def test_after_only_3_runs_a_step_is_suspected_by_its_factor_not_by_a_noise_from_two_differences():
    """Three nights at 3-12 % noise, then a 3x step: suspected in every seed; the same four nights without the step:
    never. Two differences misjudge the noise both ways: 12 % wobbling nights put 20 sigma beyond a 3.2x drop,
    three nights equal to a few tenths put it under an ordinary 12 % wobble."""
    found = alarms = 0
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        values = noisy(rng, 4, noise=rng.uniform(0.03, 0.12))
        alarms += bool(changes.find(values))
        values[3] *= 3 if seed % 2 else 1 / 3
        found += [(c.index, c.confirmed) for c in changes.find(values)] == [(3, False)]
    assert (found, alarms) == (100, 0)
    assert [(c.index, c.confirmed) for c in changes.find([100, 112, 95, 31])] == [(3, False)]
    assert changes.find([100, 100.2, 100.1, 88]) == []


def nightly_store(where, nights):
    """A nightly job's store: the same campaign every night, results cleared; `nights`: (io.runtime, MB/s of its
    3 repeats) per night, the write series of one raw device."""
    provenance = {"arrays": {"demo": {"spec": {"kind": "loop", "size": 2**30}, "devices": [{"model": "loop"}]}}}
    for night, (runtime, rates) in enumerate(nights, start=1):
        started = f"2026-12-{night:02d}T02:30:0"
        cell = {"array_spec": {"kind": "loop"}, "fs": None, "size": 10**9, "runtime": runtime, "cache": "drop"}
        entries = []
        for rep, rate in enumerate(rates, start=1):
            r = row("raw", "write", rate, rep, campaign="nightly", started_at=f"{started}{rep}+00:00")
            r |= {"workload": "io", "iodepth": 1, "shared_file": False, "lat_p50_us": 10.0}
            entries += key.entries(pd.DataFrame([r]), provenance, {}, {}, cell_of=lambda _, c=cell: c)
        store.append(where, entries)  # one night: one run


def test_the_nightly_3x_slowdown_is_suspected_after_two_nights_and_what_is_not_judged_says_why(tmp_path):
    """io.runtime 2 s on nights 1-2, 3 s from night 3 (a new series), the device held at 60 MB/s from night 5: the
    3 s series holds 199.8, 199.8 (3 repeats each, spread 0.1 %), then 60.0. Its repeats say how much a run
    varies: the drop is suspected from night 5 (not after two nights of one repeat each), and both short series
    are listed as not tested, with why."""
    fast, slow = [199.7, 199.8, 199.9], [59.95, 60.0, 60.05]
    where = str(tmp_path / "history.sqlite")
    nights = [(2, fast), (2, fast), (3, fast), (3, fast), (3, slow)]
    nightly_store(where, nights)
    env = os.environ | {"PYTHONPATH": str(REPO / "scripts")}
    argv = [sys.executable, "-m", "fsbench", "history", "changes", "--store", where, "--csv", str(tmp_path / "c.csv")]
    said = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    found = pd.read_csv(tmp_path / "c.csv")
    assert list(found["verdict"]) == ["suspected"] and list(found["after_run"]) == ["nightly 2026-12-05T02:30:01+00:00"]
    assert found["ratio"].iloc[0] == 60.0 / 199.8
    assert "not tested:" in said.stdout and "2 runs: too few to judge" in said.stdout, said.stdout
    assert "3 runs: a step is tested from 6 on" in said.stdout, said.stdout
    nightly_store(where, [(3, slow)])  # night 6: still suspected, at night 5
    said = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert list(pd.read_csv(tmp_path / "c.csv")["after_run"]) == ["nightly 2026-12-05T02:30:01+00:00"]
    # one repeat a night: two nights are no noise estimate, the same drop waits for a third night before it
    assert changes.judge([[199.8, 199.8, 60.0, 60.0]]) == [[]]
    assert [(c.index, c.confirmed) for c in changes.find([199.8, 199.8, 199.8, 60.0])] == [(3, False)]
    # and repeats that reach the step's level say the runs before it were that noisy: not suspected
    wide = [[58, 200, 3], [190, 210, 3], [59, 61, 3]]
    assert changes.judge([[199.8, 199.8, 60.0]], reps=[wide]) == [[]]


def test_the_campaign_trend_page_judges_as_history_changes_does(tmp_path):
    """A store of two campaigns' cells: the campaign `mine` has one series with an 8 % drop (p 0.02 on its own),
    `theirs` 30 flat series. Judged alone, as the campaign's trend page used to judge its own cells, the drop is a
    regression; with the store's 31 series, as `history changes` judges, it is not. The page now says what
    `history changes` says, names the family it was judged with, and labels runs readably."""
    from fsbench.history import commands

    rng = np.random.default_rng(13)
    mine = 100 * np.exp(0.03 * rng.standard_normal(12))
    mine[6:] *= 0.92
    theirs = [100 * np.exp(0.03 * rng.standard_normal(12)) for _ in range(30)]
    assert [c.index for c in changes.find(mine)] == [7]  # where the two families disagree
    provenance = {"arrays": {"demo": {"spec": {"kind": "loop", "size": 2**30}, "devices": [{"model": "loop"}]}}}
    where = str(tmp_path / "history.sqlite")
    series = {}
    for night in range(12):
        entries = []
        for campaign, target, value in [("mine", "m", mine[night])] + [
            ("theirs", f"t{i}", v[night]) for i, v in enumerate(theirs)
        ]:
            r = row(target, "write", value, 1, campaign=campaign, started_at=f"2026-11-{night + 1:02d}T17:14:25+00:00")
            r |= {"workload": "io", "iodepth": 1, "shared_file": False, "lat_p50_us": 10.0, "fs_type": "raw"}
            size = 10**9 + int(target[1:] or -1)  # a cell of its own: a series of its own
            cell = {"array_spec": {"kind": "loop"}, "fs": None, "size": size, "cache": "drop"}
            entries += key.entries(pd.DataFrame([r]), provenance, {}, {}, cell_of=lambda _, c=cell: c)
            series[target] = entries[-1]["series"]
        store.append(where, entries)
    page = commands.trends(where, tmp_path / "trends.html", "t", 0.05, 10, series={series["m"]}, files=False)
    text = page.read_text()
    said = commands.changes_mod.analyse(commands.points_mod.points(store.load(where)), store.load_marks(where), 0.05)
    assert said[said["series"] == series["m"]].empty  # history changes: no change in it
    assert "data-verdict=''" in text and "regression" not in text.split("<div class='grid'>")[1]
    assert "judged with all 31 series of the store" in text
    assert "2026-11-01T17:14:25" not in text  # runs are labelled 'mine 11-01 17:14', not by their whole id


def test_one_test_per_series_and_benjamini_hochberg_across_them():
    """50 flat series of 20 runs judged in one call: no alarm in >= 95 of 100 stores (3 % noise)."""
    alarmed = 0
    for seed in range(60_000, 60_100):
        rng = np.random.default_rng(seed)
        alarmed += any(changes.judge([noisy(rng, 20) for _ in range(50)]))
    assert alarmed <= at_most(bench().FLAT_TARGET, 100), f"{alarmed} of 100 stores had an alarm"
    assert changes.bh_cutoff([0.001, 0.02, 0.04, 0.5], fdr=0.05) == 0.02  # 0.001 ≤ .0125, 0.02 ≤ .025, 0.04 > .0375
    assert changes.bh_cutoff([0.3, 0.9]) == -1.0


def test_series_of_one_noise_borrow_it_from_each_other(monkeypatch):
    """Stores of 50 series at 3 % noise, 10 of them stepping 10 % at random runs: each series' t leans on the
    noise of all (changes.noise_prior), which finds the steps at their run within 2 points of the best any rule
    can do (issue 40's target), and more of them than each series on its own noise finds."""
    b = bench()

    def found() -> int:
        return sum(b.ten_percent_stores(np.random.default_rng(seed), 1)[0] for seed in range(50_000, 50_030))

    borrowed = found()
    assert borrowed >= at_least(b.best_at_its_run(1.1, None) - b.NEAR_BOUND, 300), f"found {borrowed} of 300"
    monkeypatch.setattr(changes, "PRIOR_SERIES", 10**9)  # no call has that many: each series keeps its own noise
    assert found() < borrowed


def test_the_noise_prior_borrows_only_what_the_series_share():
    rng = np.random.default_rng(50_000)

    def variances(sigmas):
        return [np.var(np.log(noisy(rng, 20, noise=s)), ddof=1) for s in sigmas]

    d0, s02 = changes.noise_prior(variances([0.03] * 50), [19] * 50)
    assert d0 >= 50 and 0.025 < np.sqrt(s02) < 0.035, (d0, s02)  # one noise: worth many runs, at 3 %
    d0, _ = changes.noise_prior(variances(np.exp(rng.uniform(np.log(0.01), np.log(0.06), 50))), [19] * 50)
    assert 0 < d0 < 10, d0  # noises from 1 to 6 %: each series mostly keeps its own
    assert changes.noise_prior(variances([0.03] * 9), [19] * 9) == (0.0, 0.0)  # too few series to tell


def test_a_store_whose_nights_are_wild_is_judged_against_a_null_as_wild():
    """The tails of the nights' noise are read from the store's own residuals (changes.tail_dof): normal noise,
    normal; Student's t of 3 degrees of freedom, 3 or 4; too few series, nothing borrowed. The null is then drawn
    with that noise, which asks more of a wide step: a wild night makes one as easily. Stores of 50 flat series
    with t3 noise alarm in at most 5 % (issue 40's target)."""
    b = bench()
    rng = np.random.default_rng(50_000)
    normal = np.log(b.runs(rng, (50, b.RUNS), 0.03)[0])
    wild = np.log(b.runs(rng, (50, b.RUNS), 0.03, heavy=True)[0])
    assert changes.tail_dof(list(normal)) == 0
    assert changes.tail_dof(list(wild)) in (3.0, 4.0)
    assert changes.tail_dof(list(wild[:9])) == 0  # fewer than PRIOR_SERIES
    # An 8 % step at 3 % noise, the noise borrowed from 50 series (worth 50 runs): a t3 null asks more of it.
    step = np.log(noisy(rng, b.RUNS)) + np.where(np.arange(b.RUNS) >= 17, np.log(1.08), 0)
    prior = (50.0, 0.03**2)
    cut, p_normal = changes.best_cut(step, prior=prior, pieces=50)
    cut_wild, p_wild = changes.best_cut(step, prior=prior, pieces=50, dof=3.0)
    assert cut == cut_wild == 17 and p_wild > 2 * p_normal, (p_normal, p_wild)
    alarmed = sum(b.flat_store(np.random.default_rng(seed), True, False) for seed in range(50_000, 50_100))
    assert alarmed <= at_most(b.FLAT_TARGET, 100), f"{alarmed} of 100 stores with t3 noise had an alarm"


def test_flat_series_of_30_runs_raise_at_most_5_percent_false_alarms():
    alarms = sum(bool(changes.find(noisy(np.random.default_rng(1000 + seed), 30))) for seed in SEEDS)
    assert alarms <= at_most(bench().FLAT_TARGET, 100), f"{alarms} of 100 flat series had a change point"


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
    assert alarms <= at_most(bench().FLAT_TARGET, 100)


def test_too_few_runs_are_no_series_to_judge():
    assert changes.find([100, 50]) == [] and changes.find([100, 100, 50]) == []
    # the five runs: three before, two after: suspected, not yet confirmed
    assert [(c.index, c.confirmed) for c in changes.find([200, 201, 199, 60, 61])] == [(3, False)]


def points(values, metric="mb_s_durable", contexts=None, campaigns=None, op="write"):
    """`history series` points of one series: a run per value."""
    n = len(values)
    campaigns = campaigns or [f"run{i}" for i in range(n)]
    base = {c: None for c in KEY_COLUMNS} | {"host": "h", "array": "demo", "target": "ext4", "op": op}
    base |= {"workload": "io"}
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
    assert c["verdict"] == "regression" and c["p_value"] < 0.05
    assert c["context_changed"] == "kernel 6.8.0 → 6.9.1"
    assert list(found.columns[-len(changes.COLUMNS) :]) == changes.COLUMNS


def test_one_test_per_series_on_its_lead_metric_the_others_beside_it():
    """A read is tested on mb_s; its latency, which moved with it, is reported beside, not tested on its own."""
    rate = points([100, 101, 99, 100, 120, 121, 119, 120], metric="mb_s", op="read")
    latency = points([10, 10, 10, 10, 8, 8, 8, 8], metric="lat_p50_us", op="read")
    found = changes.analyse(pd.concat([rate, latency], ignore_index=True), marks={})
    assert list(found["verdict"]) == ["improvement"] and list(found["metric"]) == ["mb_s"]
    assert found.iloc[0]["others"] == "lat_p50_us ×0.8"
    # a latency alone never makes a change point: it is no series' lead metric
    assert changes.analyse(latency, marks={}).empty


def test_a_marked_run_starts_a_new_baseline():
    values = [100, 101, 99, 100, 80, 81, 79, 80]
    assert changes.analyse(points(values), marks={"run4": "new firmware"}).empty
    # a later step is still found, judged against the new baseline only
    later = changes.analyse(points(values + [60, 61, 59]), marks={"run4": "new firmware"})
    assert list(later["after_run"].str.split().str[0]) == ["run8"]


def test_the_benchmark_runs_in_smoke_mode():
    """make bench-history, tiny (SMOKE=1): a broken benchmark fails here, not months later."""
    env = os.environ | {"SMOKE": "1"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/history.py")], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("| flat, ") == 3 and proc.stdout.count("| 3× step") == 3 and "of 3 stores" in proc.stdout
    assert proc.stdout.count("| 10 % step at a random run") == 4 and "Reading it (generated" in proc.stdout
