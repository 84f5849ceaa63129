"""The time series of a measurement: what the engines record (the C loop's bins, fio's logs), the series a record
keeps (io.log_interval, finer for short runs), and what it says: drop, not-steady, stonewall, stragglers."""

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from statistics import median

import pandas as pd
import pytest

from fsbench.analysis.timeseries_table import COLUMNS as SERIES_COLUMNS
from fsbench.campaign.cells import CellSpec
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.engines import fio, loops
from fsbench.engines import python as engine
from fsbench.engines.job import Job, Stream
from fsbench.measurement.judgement import judged_series, series_flags, series_of
from fsbench.report.per_host import hosts_blocks, with_hosts_html, with_hosts_markdown
from fsbench.toolkit import timeseries

from conftest import needs_root, needs_throttle, ram_xfs_campaign, run_campaign, slow_device

KiB, MiB = 2**10, 2**20
ENGINES = {"python": engine, "fio": fio}


@pytest.fixture
def stepping_clock(monkeypatch):
    """loops.c's clock advancing 1 ms a read from 0: a depth-1 call takes exactly 1 ms."""
    monkeypatch.setattr(loops, "CLOCK_STEP_NS", 10**6)


def test_the_c_loop_counts_each_call_in_the_bin_its_clock_read_falls_in(tmp_path, stepping_clock):
    job = Job((Stream(str(tmp_path / "a")),), 64 * KiB, 4 * KiB, runtime=0.01)
    got = engine.write(job)
    rec = got["recorded_series"]
    # One clock read starts the loop, each call ends 1 ms later: call k ends bin k, (k ms, k+1 ms].
    assert rec["step_s"] == 0.001 and rec["source"] == "python loop"
    assert rec["ops"] == [1] * 10 and rec["bytes"] == [4 * KiB] * 10
    assert all("series" not in s for s in got["streams"])  # summed over the streams, not kept in each


def test_the_c_loop_folds_its_bins_tenfold_when_they_run_out(tmp_path, stepping_clock, monkeypatch):
    monkeypatch.setattr(loops, "SERIES_BINS", 20)
    job = Job((Stream(str(tmp_path / "a")),), 1 * MiB, 4 * KiB, runtime=0.25)  # 250 calls of 1 ms
    rec = engine.write(job)["recorded_series"]
    assert rec["step_s"] == pytest.approx(0.1) and rec["ops"] == [100, 100, 50]  # folded at 20 ms, then 200 ms
    assert sum(rec["bytes"]) == 250 * 4 * KiB


def test_the_series_is_finer_for_a_short_measurement():
    assert timeseries.interval_for(60, 1.0) == 1.0
    assert timeseries.interval_for(10, 1.0) == 1.0
    assert timeseries.interval_for(9.9, 1.0) == pytest.approx(0.1)
    assert timeseries.interval_for(0.5, 1.0) == pytest.approx(0.01)
    assert timeseries.interval_for(0.5, 1.0, resolution=0.1) == pytest.approx(0.1)  # no finer than recorded


def test_a_series_sums_the_recorded_bins_into_intervals_the_last_one_short():
    rec = timeseries.raw(100.0, 0.001, [1000] * 2500, [1] * 2500, "python loop")
    ts = timeseries.series(rec, 2.5, 1.0)
    assert ts["interval_s"] == pytest.approx(0.1) and len(ts["bytes"]) == 25 and sum(ts["bytes"]) == 2_500_000
    assert ts["t_s"][:2] == [0.1, 0.2] and ts["t_s"][-1] == 2.5 and set(ts["ops"]) == {100}
    ts = timeseries.series(rec, 2.55, 1.0)
    assert ts["interval_lengths_s"][-1] == pytest.approx(0.05) and ts["ops"][-1] == 0
    assert timeseries.series({}, 1.0) == {}  # dd: no series


def steady_series(rates: list[float], ops: int = 100) -> dict:
    n = len(rates)
    return {
        "start": 0.0,
        "interval_s": 1.0,
        "t_s": [float(i + 1) for i in range(n)],
        "interval_lengths_s": [1.0] * n,
        "bytes": [int(r) for r in rates],
        "ops": [ops] * n,
    }


def test_drop_is_an_interval_below_the_share_of_the_median():
    assert timeseries.drop(steady_series([400e6] * 8)) is None
    found = timeseries.drop(steady_series([400e6] * 3 + [40e6] * 5 + [400e6] * 4))
    assert found["at_s"] == 4.0 and found["rate"] == 40e6 and found["median"] == 400e6
    assert timeseries.drop(steady_series([400e6] * 6 + [250e6] * 2)) is None
    assert timeseries.drop(steady_series([400e6] * 6 + [250e6] * 2), share=0.7)["rate"] == 250e6
    # Too few operations per interval: pairs merge until there are enough, else no verdict.
    assert timeseries.drop(steady_series([1e6, 0] * 10, ops=2)) is None
    # Too short a run: windows under DROP_WINDOW (0.2 s) cannot tell a drop from a scheduler's stall.
    brief = steady_series([400e6] * 20 + [0] * 5 + [400e6] * 20)
    brief = brief | {"interval_s": 0.001, "interval_lengths_s": [0.001] * 45, "t_s": [i / 1000 for i in range(1, 46)]}
    assert timeseries.drop(brief) is None


def test_steady_state_is_the_snia_range_and_excursion_of_the_last_window():
    assert timeseries.steady(steady_series([50e6, 400e6, 400e6, 410e6, 395e6, 405e6, 400e6]))["steady"]
    rising = timeseries.steady(steady_series([300e6, 320e6, 340e6, 360e6, 380e6]))
    assert not rising["steady"] and rising["excursion"] == pytest.approx(80 / 340)
    noisy = timeseries.steady(steady_series([400e6, 300e6, 400e6, 300e6, 400e6]))
    assert not noisy["steady"] and noisy["range"] == pytest.approx(100 / 360)
    assert not timeseries.steady(steady_series([400e6] * 3))["steady"]  # fewer intervals than the window
    assert series_flags({"judged": timeseries.judge(steady_series([400e6] * 3), steady_check={})}) == ["not-steady"]
    assert series_flags({"judged": timeseries.judge(steady_series([400e6] * 3))}) == []  # no io.steady: not judged


def test_stonewall_is_what_every_host_had_moved_when_the_first_finished():
    fast = {"start": 10.0, "interval_s": 1.0, "t_s": [1.0, 2.0], "bytes": [100, 100]}
    slow = {"start": 10.0, "interval_s": 1.0, "t_s": [1.0, 2.0, 3.0, 4.0], "bytes": [50, 50, 50, 50]}
    wall = timeseries.stonewall(
        {
            "a": {"start": 10.0, "end": 12.0, "bytes": 200, "timeseries": fast},
            "b": {"start": 10.0, "end": 14.0, "bytes": 200, "timeseries": slow},
        }
    )
    assert (wall["first_done_s"], wall["last_done_s"], wall["tail_s"]) == (2.0, 4.0, 2.0)
    assert wall["stonewall_bytes"] == 300 and wall["stonewall_mb_s"] == 300 / 2 / 1e6
    # The first host's series starts a little after the host did (its first write, not its launch): done is done,
    # all 200 of its bytes count, not what its series' clock had reached by the host's end.
    late = fast | {"start": 10.05}
    wall = timeseries.stonewall(
        {
            "a": {"start": 10.0, "end": 12.0, "bytes": 200, "timeseries": late},
            "b": {"start": 10.0, "end": 14.0, "bytes": 200, "timeseries": slow},
        }
    )
    assert wall["stonewall_bytes"] == 300


def test_a_straggler_is_far_below_the_other_hosts():
    assert set(timeseries.stragglers({"a": 400e6, "b": 40e6})) == {"b"}
    assert timeseries.stragglers({"a": 400e6, "b": 350e6}) == {}
    many = {"a": 400e6, "b": 410e6, "c": 390e6, "d": 405e6, "e": 250e6}
    assert set(timeseries.stragglers(many)) == {"e"}
    assert timeseries.stragglers(many | {"e": 380e6}) == {}


def test_combine_sums_streams_by_their_end_times_at_the_coarsest_step():
    a = timeseries.raw(0.0, 0.001, [1] * 20, [1] * 20, "x")
    b = timeseries.raw(0.0, 0.01, [5, 5], [1, 1], "x")
    both = timeseries.combine([a, b])
    assert both["step_s"] == 0.01 and both["bytes"] == [15, 15] and both["ops"] == [11, 11]
    assert timeseries.combine([None, None]) == {}


BASE = {
    "campaign": "t",
    "scratch": "/var/tmp/fsbench-series-test",
    "arrays": {"a": {"kind": "loop", "size": "1GiB"}},
    "filesystems": {},
    "io": {"size": "64MiB", "block_sizes": ["64KiB"], "repeats": 1},
}


def test_log_interval_drop_and_steady_reach_the_cells_only_when_set():
    test = "seq-64KiB-buffered-1s"
    # Not set: the params are what they were, so a finished campaign is not measured again.
    spec = Plan(validate(BASE)).cell_spec("local", "a", "raw", test, 1)
    assert not {"log_interval", "drop", "steady"} & set(spec)
    io = BASE["io"] | {"runtime": "30s", "log_interval": "500ms", "drop": 0.3, "steady": {"window": 8}}
    spec = Plan(validate(BASE | {"io": io})).cell_spec("local", "a", "raw", test, 1)
    assert spec["log_interval"] == 0.5 and spec["drop"] == 0.3
    assert spec["steady"] == {"window": 8, "range": 0.20, "slope": 0.10}
    for bad, message in [
        ({"log_interval": "often"}, r"'io.log_interval': value 'often' is not allowed"),
        ({"drop": 1.5}, r"'io.drop'"),
        ({"steady": {"window": 5}}, r"'io.steady'.*with io.runtime only"),
    ]:
        with pytest.raises(ConfigError, match=message):
            validate(BASE | {"io": BASE["io"] | bad})


def cell_spec(**settings) -> CellSpec:
    place = {"campaign": "t", "host": "local", "array": "a", "target": "raw", "fs_type": "raw", "test": "x", "rep": 1}
    return CellSpec.from_params(place | {"array_spec": {}, "fs": None, "workdir": "/nonexistent"} | settings)


def test_a_record_judges_its_series_with_the_cells_settings():
    rec = timeseries.raw(0.0, 0.1, [400] * 30 + [40] * 20 + [400] * 30, [100] * 80, "python loop")
    result = {"recorded_series": rec, "seconds": 8.0}
    cell = cell_spec(runtime=8.0, steady={"window": 5, "range": 0.2, "slope": 0.1})
    ts = series_of(cell, result)
    assert ts["interval_s"] == 0.1 and ts["judged"]["drop"]["at_s"] == pytest.approx(3.2)  # judged in 0.2 s windows
    assert ts["judged"]["steady"]["steady"] and series_flags(ts) == ["drop"]
    assert series_flags(series_of(cell_spec(runtime=8.0, drop=0.05), result)) == []
    # io.steady judges time-based runs only
    assert "steady" not in series_of(cell_spec(steady={"window": 5}), result)["judged"]
    assert judged_series({"recorded_series": {}, "seconds": 1.0}) == {}  # dd


# A real device whose rate is cut from outside: the tests' throttle (conftest.slow_device) -----------------------

FAST, SLOW = 400 * 10**6, 40 * 10**6  # bytes/s
CUT_AT = 2.0  # seconds into the write


@contextmanager
def cut_from_outside(folder: Path):
    """A device held at FAST, then at SLOW from CUT_AT seconds after the body starts; its path."""
    with slow_device(folder, 1536 * MiB, FAST) as slow:
        timer = threading.Timer(CUT_AT, slow.set_rate, (SLOW,))
        timer.start()
        try:
            yield slow.dev
        finally:
            timer.cancel()
            timer.join()


@needs_root
@needs_throttle
@pytest.mark.parametrize("name", ["python", "fio"])
def test_a_write_cut_from_outside_is_flagged_drop_and_its_series_shows_the_cut(ram_scratch, name):
    with cut_from_outside(ram_scratch / "slow") as dev:
        job = Job((Stream(dev, 0, True),), 1536 * MiB, 64 * KiB, direct=True, runtime=4.0)
        got = ENGINES[name].write(job)
    ts = judged_series(got, steady={"window": 30, "range": 0.2, "slope": 0.1})
    assert ts["interval_s"] == pytest.approx(0.1) and sum(ts["bytes"]) == got["bytes"]
    rates = dict(zip(ts["t_s"], timeseries.rates(ts), strict=True))
    # fio's series starts with its first write, a few tenths of a second after the throttle's clock started.
    before = [r for t, r in rates.items() if 0.3 <= t <= CUT_AT - 0.6]
    after = [r for t, r in rates.items() if CUT_AT + 0.5 <= t <= 3.9]
    assert median(after) < 1.25 * SLOW < 2.5 * SLOW < median(before), (before, after)
    assert ts["judged"]["drop"]["at_s"] >= CUT_AT - 0.6 and ts["judged"]["drop"]["median"] > 2.5 * SLOW
    # Thirty intervals, across the cut, are far from steady.
    assert series_flags(ts) == ["drop", "not-steady"]
    assert series_flags(judged_series(got)) == ["drop"]  # no io.steady: no steady-state verdict


def test_a_constant_rate_is_steady_and_a_rising_one_is_not(tmp_path, stepping_clock):
    """The stepped clock: every call takes 1 ms, so the rate is exactly constant (a throttle is not that even
    over 0.1 s: it lets I/O through in slices)."""
    job = Job((Stream(str(tmp_path / "a")),), 4 * MiB, 4 * KiB, runtime=0.5)
    ts = timeseries.series(engine.write(job)["recorded_series"], 0.0, 0.05)
    assert ts["interval_s"] == 0.05 and set(ts["ops"]) == {50}
    assert timeseries.judge(ts, steady_check={})["steady"]["steady"] and timeseries.drop(ts) is None
    rising = ts | {"bytes": [b * (1 + i / 10) for i, b in enumerate(ts["bytes"])]}
    assert series_flags({"judged": timeseries.judge(rising, steady_check={})}) == ["not-steady"]


# A campaign: timeseries.csv beside measurements.csv, and its plot -----------------------------------------------


@needs_root
def test_dd_records_no_series_and_says_so(ram_scratch, tmp_path):
    config = ram_xfs_campaign(ram_scratch, "dd", engine="dd", size="16MiB", block_sizes=["1MiB"])
    run_campaign(tmp_path, config)
    out = tmp_path / "results/dd"
    assert list(pd.read_csv(out / "timeseries.csv").columns) == SERIES_COLUMNS
    assert pd.read_csv(out / "timeseries.csv").empty and not (out / "plots/timeseries.png").exists()
    record = json.loads(next((out / "runs").glob("*/ram/xfs/*/rep1/write.json")).read_text())
    assert record["timeseries"] == {} and "drop" not in record["row"]["flags"]


@needs_root
@pytest.mark.parametrize("engine_name", ["python", "fio"])
def test_a_campaign_gathers_every_measurements_series_into_timeseries_csv(ram_scratch, tmp_path, engine_name):
    config = ram_xfs_campaign(
        ram_scratch,
        "series",
        raw=True,
        engine=engine_name,
        size="64MiB",
        block_sizes=["256KiB"],
        patterns=["seq", "rw"],
    )
    run_campaign(tmp_path, config)
    out = tmp_path / "results/series"
    table, measured = pd.read_csv(out / "timeseries.csv"), pd.read_csv(out / "measurements.csv")
    assert list(table.columns) == SERIES_COLUMNS
    cells = ["target", "op", "pattern", "rep"]
    # Every measurement has its series (a mix: its reads and its writes), and its bytes add up to the figure's.
    sums = table.groupby(cells)[["bytes", "ops"]].sum()
    for r in measured.itertuples():
        got = sums.loc[(r.target, r.op, r.pattern, r.rep)]
        assert got["bytes"] == r.bytes and got["ops"] == r.ops, r
    assert (table.mb_s == table.bytes / table.interval_s / 1e6).all()
    for ext in ("png", "svg"):
        assert (out / "plots" / f"timeseries.{ext}").stat().st_size > 1000
    record = json.loads(next((out / "runs").glob("*/ram/raw/seq-*/rep1/write.json")).read_text())
    assert record["timeseries"]["interval_s"] <= 0.1 and "drop" in record["timeseries"]["judged"]
    assert "log_interval" not in record["cell"]  # not set: the cells' params are what they were


def test_summary_gets_a_per_host_section_for_all_hosts_cells(tmp_path):
    row = {"array": "p", "target": "path", "block_size": MiB, "op": "write", "rep": 1, "mb_s": 32.1}
    hosts = {
        "first_done_s": 0.032,
        "last_done_s": 3.134,
        "tail_s": 3.102,
        "stonewall_bytes": 50.7e6,
        "stonewall_mb_s": 1591.0,
        "hosts": {
            "n1": {"first_done_s": 0.03, "last_done_s": 0.032, "mb_s": 1612.0},
            "n2": {"first_done_s": 3.1, "last_done_s": 3.134, "mb_s": 16.1, "straggler": "16.1 MB/s, 99% below"},
        },
    }
    (tmp_path / "write.json").write_text(json.dumps({"row": row, "hosts": hosts}))
    (tmp_path / "plain.json").write_text(json.dumps({"row": row}))
    blocks = hosts_blocks([str(tmp_path / "write.json"), str(tmp_path / "plain.json")])
    md = with_hosts_markdown("# title\n", blocks)
    assert "## All-hosts cells, per host" in md and "### p/path 1MiB write rep 1" in md
    assert "stonewall 1591 MB/s" in md and "| n2 | 3.100 | 3.134 | 16.1 | 16.1 MB/s, 99% below |" in md
    page = with_hosts_html('<body>\n<h1>t</h1>\n<p class="note">n</p>\n</body></html>', blocks)
    assert page.index("All-hosts cells, per host") < page.index('<p class="note">')
    assert hosts_blocks([str(tmp_path / "plain.json")]) == [] and with_hosts_markdown("x", []) == "x"
