"""Time-based runs (io.runtime): a write stops at the time (or at io.size, whichever comes first, and says which),
its read covers exactly what it wrote, a mix runs until the time is up; python and fio; refusals where an engine
cannot do it. The time is held deterministically: a stepping clock in the unit tests, the kernel's blkio throttle
under real loop devices in the others."""

import json
import struct
from pathlib import Path

import pandas as pd
import pytest

from fsbench.campaign.cells import CellSpec
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.engines import fio as fioengine
from fsbench.engines import loops, mixed
from fsbench.engines import python as engine
from fsbench.engines.job import NEVER, SIZE, TIME, TIME_OR_SIZE, Job, Stream, offsets
from fsbench.measurement.cell_job import job_for
from fsbench.storage.arrays import ArrayState, Target
from fsbench.toolkit.sizes import parse_duration

from conftest import RAM_ROOT, held, needs_root, needs_throttle, private_scratch, run_campaign, slow_device

KiB, MiB = 2**10, 2**20


@pytest.mark.parametrize(
    ("text", "seconds"), [("60s", 60), ("2m", 120), ("1h", 3600), ("500ms", 0.5), ("90", 90), (1.5, 1.5), (3, 3)]
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["0", 0, "-1s", "soon", "", "1d", "s", True, None, [1], float("inf")])
def test_parse_duration_refuses(bad):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(bad)


BASE = {
    "campaign": "t",
    "scratch": "/var/tmp/fsbench-runtime-test",
    "arrays": {"a": {"kind": "loop", "size": "1GiB"}},
    "filesystems": {"xfs": {"type": "xfs"}},
    "io": {"size": "64MiB", "block_sizes": ["64KiB"], "patterns": ["seq", "rand"], "repeats": 1},
}


def test_runtime_is_validated_and_reaches_the_cells_only_when_set():
    plan = Plan(validate(BASE | {"io": BASE["io"] | {"runtime": "90s"}}))
    assert plan.cell_spec("local", "a", "xfs", "rand-64KiB-buffered-1s", 1)["runtime"] == 90.0
    # Without it the params are what they were: a finished size-based campaign is not measured again.
    assert "runtime" not in Plan(validate(BASE)).cell_spec("local", "a", "xfs", "rand-64KiB-buffered-1s", 1)
    for io, message in [
        ({"runtime": "soon"}, r"'io.runtime': value 'soon' is not allowed; allowed: a time above zero"),
        ({"runtime": 0}, r"'io.runtime': value 0 is not allowed"),
        ({"runtime": "1m", "engine": "dd"}, r"'io.engine': value 'dd'.*dd stops only at its count"),
        ({"runtime": "1m", "engine": "fio"}, r"'io.patterns': value \[\"seq\", \"rand\"\].*no rand with io.engine fio"),
    ]:
        with pytest.raises(ConfigError, match=message):
            validate(BASE | {"io": BASE["io"] | io})
    assert validate(BASE | {"io": BASE["io"] | {"runtime": "1m", "engine": "fio", "patterns": ["seq", "randrw"]}})


# A cell's step, the op its engine runs, and what ends that run: write, read and mix, time-based or not.
ENDS = [
    ("seq", None, "write", "write", SIZE),
    ("seq", None, "read", "read", SIZE),
    ("seq", 2.0, "write", "write", TIME_OR_SIZE),
    ("seq", 2.0, "read", "read", SIZE),  # what the write moved
    ("randrw", None, "write", "write", SIZE),  # the mix's layout
    ("randrw", None, "read", "mixed", SIZE),
    ("randrw", 2.0, "write", "write", SIZE),  # the layout is never timed
    ("randrw", 2.0, "read", "mixed", TIME),
]


@pytest.mark.parametrize(("pattern", "runtime", "step", "op", "ends"), ENDS)
def test_one_decision_says_which_runs_the_time_ends(pattern, runtime, step, op, ends):
    """cell_job.job_for decides which runs are time-based; Job.ends says what ends each, for every engine."""
    place = {"campaign": "t", "host": "local", "array": "a", "target": "raw", "fs_type": "raw", "test": "x", "rep": 1}
    settings = {"pattern": pattern, "block_size": MiB, "size": 4 * MiB, "streams": 2, "runtime": runtime}
    cell = CellSpec.from_params(place | {"array_spec": {}, "fs": None, "workdir": "/nonexistent"} | settings)
    loop = Target(ArrayState("loop", ("/dev/loop-none",), ("/dev/loop-none",)))
    written = [2 * MiB, 3 * MiB] if step == "read" else []
    job = job_for(loop, cell, "/nonexistent", step, written)
    assert job.ends(op) == ends
    assert (job.deadline(op, 10) == NEVER) == (ends == SIZE)
    timed_read = runtime and step == "read" and op == "read"
    assert job.expected_bytes(op) == (None if ends != SIZE else 5 * MiB if timed_read else 8 * MiB)


def test_a_read_is_never_time_based(tmp_path):
    job = Job((Stream(str(tmp_path / "a")),), 64 * KiB, 4 * KiB, runtime=1.0)
    with pytest.raises(ValueError, match="a read is never time-based"):
        job.ends("read")


@pytest.fixture
def stepping_clock(monkeypatch):
    """The engine's clock (loops.c's, for each stream on its own) advancing 1 ms a read, from 0: a runtime of
    40 ms ends a depth-1 write at its 40th call, however fast the machine is."""
    monkeypatch.setattr(loops, "CLOCK_STEP_NS", 10**6)


def stamped_blocks(path: Path, bs: int) -> set[int]:
    """Offsets of the blocks that hold data the python engine wrote: each starts with its own offset (the stamp)."""
    data, empty = path.read_bytes(), bytes(bs)
    return {
        off
        for off in range(0, len(data), bs)
        if struct.unpack_from("<Q", data, off)[0] == off and data[off : off + bs] != empty
    }


@pytest.mark.parametrize("pattern", ["seq", "rand"])
def test_a_time_based_write_stops_at_the_time_and_its_read_covers_what_it_wrote(tmp_path, stepping_clock, pattern):
    bs = 4 * KiB
    job = Job((Stream(str(tmp_path / "a")), Stream(str(tmp_path / "b"))), 4 * MiB, bs, pattern=pattern, runtime=0.04)
    wrote = engine.write(job)
    for i, s in enumerate(wrote["streams"]):
        assert s["stopped_by"] == "runtime" and s["ops"] == 40 and s["bytes"] == 40 * bs
        # Exactly the first 40 blocks of the stream's order: the ones its read (and only they) will cover.
        assert stamped_blocks(Path(s["path"]), bs) == set(offsets(job, i)[:40])
    assert "for 0.04 s, at most 1024 x 4096 B" in wrote["command"]
    counts = tuple(s["bytes"] // bs for s in wrote["streams"])
    read_job = Job(job.streams, job.size, bs, pattern=pattern, counts=counts)
    assert [offsets(read_job, i) for i in (0, 1)] == [offsets(job, i)[:40] for i in (0, 1)]
    got = engine.read(read_job)
    assert got["bytes"] == wrote["bytes"] and got["ops"] == 80
    assert "stopped_by" not in got["streams"][0]


def test_a_time_based_write_that_reaches_io_size_first_says_so(tmp_path, stepping_clock):
    job = Job((Stream(str(tmp_path / "a")),), 64 * KiB, 4 * KiB, runtime=60)
    stream = engine.write(job)["streams"][0]
    assert (stream["stopped_by"], stream["ops"], stream["bytes"]) == ("size", 16, 64 * KiB)


def test_a_time_based_mix_runs_passes_until_the_time_is_up(tmp_path, stepping_clock):
    bs = 4 * KiB
    job = Job((Stream(str(tmp_path / "a")),), 256 * KiB, bs)
    engine.write(job)
    # One clock read to start, one a call: the 200th call ends the 200 ms.
    got = mixed.run(Job(job.streams, job.size, bs, pattern="rand", runtime=0.2), 75)
    assert got["read"]["ops"] + got["write"]["ops"] == 200  # more than one pass of 64 blocks
    assert got["read"]["ops"] == 3 * 48 + sum(mixed.kinds(64, 75, 0)[:8])  # three whole passes, then part of one


# Real devices: the tests' throttle holds them slow enough that the time always ends the write first --------------

RATE = 16 * 10**6  # bytes/s, reads and writes


@pytest.fixture
def slow_loop():
    """A device of 64 MiB over RAM, held at RATE."""
    with private_scratch(RAM_ROOT) as scratch, slow_device(scratch / "slow", 64 * MiB, RATE) as slow:
        yield slow.dev


@needs_root
@needs_throttle
def test_fio_stops_a_write_at_the_time_reads_what_it_wrote_and_mixes_for_the_time(slow_loop):
    bs = 64 * KiB
    job = Job((Stream(slow_loop, 0, True), Stream(slow_loop, 32 * MiB, True)), 32 * MiB, bs, direct=True, runtime=0.5)
    assert "runtime=500ms" in fioengine.job_file(job, "write") and "time_based" not in fioengine.job_file(job, "write")
    wrote = fioengine.write(job)
    assert all(s["stopped_by"] == "runtime" for s in wrote["streams"])
    assert 0 < wrote["bytes"] < 2 * 32 * MiB and wrote["bytes"] % bs == 0
    assert wrote["seconds_durable"] >= 0.5
    read_job = Job(job.streams, job.size, bs, direct=True, counts=tuple(s["bytes"] // bs for s in wrote["streams"]))
    text = fioengine.job_file(read_job, "read")
    assert [f"io_size={s['bytes']}" in text for s in wrote["streams"]] == [True, True]
    got = fioengine.read(read_job)
    assert [s["bytes"] for s in got["streams"]] == [s["bytes"] for s in wrote["streams"]]
    mix = fioengine.mixed(Job(job.streams, job.size, bs, pattern="rand", direct=True, runtime=0.5), 70)
    assert "time_based=1" in mix["read"]["command"]
    assert mix["read"]["seconds"] >= 0.5 and mix["read"]["ops"] > 0 and mix["write"]["ops"] > 0


@needs_root
@needs_throttle
@pytest.mark.e2e
def test_a_time_based_campaign_moves_what_the_time_allows_and_reads_exactly_that(tmp_path):
    """A device held at 16 MB/s (raw and ext4) and a path array on tmpfs, 1 s per write, at most 24 MiB: the
    slow one stops at the time, the fast one at io.size (flagged), and every read moves what its write moved."""
    with private_scratch(RAM_ROOT) as held_here, slow_device(held_here / "slow", 160 * MiB, RATE) as slow:
        scratch = held_here / "campaign"
        (scratch / "fast").mkdir(parents=True)
        config = {
            "campaign": "timed",
            "scratch": str(scratch),
            "arrays": {
                "slow": {"kind": "device", "device": slow.dev},
                "fast": {"kind": "path", "path": str(scratch / "fast")},
            },
            "allow_destroy": [slow.dev],
            "raw": True,
            "filesystems": {"ext4": {"type": "ext4"}},
            "io": {
                "size": "24MiB",
                "runtime": "1s",
                "block_sizes": ["64KiB"],
                "patterns": ["seq", "rand", "randrw"],
                "direct": [True],
                "cache": "direct",
                "repeats": 1,
            },
        }
        run_campaign(tmp_path, config)
        assert not held(scratch)
    df = pd.read_csv(tmp_path / "results/timed/measurements.csv")
    assert sorted(df.groupby(["array", "target"]).groups) == [("fast", "path"), ("slow", "ext4"), ("slow", "raw")]
    assert len(df) == 3 * 3 * 2  # targets × patterns × (write and read, or a mix's read and write)
    for (array, target, pattern), cell in df.groupby(["array", "target", "pattern"]):
        write, read = (cell[cell["op"] == op].iloc[0] for op in ("write", "read"))
        record = json.loads((tmp_path / read["record"]).read_text())
        assert record["cell"]["runtime"] == 1.0
        if pattern == "randrw":  # the mix ran for the time over files laid down in full
            assert write["seconds"] == read["seconds"] >= 1.0 and read["ops"] > 0 and write["ops"] > 0
            assert 0.55 < read["ops"] / (read["ops"] + write["ops"]) < 0.85
            continue
        assert read["bytes"] == write["bytes"], (array, target, pattern)
        assert "short-transfer" not in str(read["flags"])
        if array == "slow":
            assert 0 < write["bytes"] < 24 * MiB and write["seconds"] >= 1.0, (target, pattern, write["bytes"])
            assert "size-before-runtime" not in str(write["flags"])
        else:  # tmpfs writes 24 MiB long before a second is up: io.size ended it, and the row says so
            assert write["bytes"] == 24 * MiB and "size-before-runtime" in write["flags"]


@needs_root
@needs_throttle
def test_a_deep_python_mix_runs_for_the_time(slow_loop):
    """io_uring with 8 in flight, held at 16 MB/s: a 64 MiB region takes 4 s a pass, the 0.5 s ends it first."""
    job = Job((Stream(slow_loop, 0, True),), 64 * MiB, 64 * KiB, pattern="rand", direct=True, iodepth=8, runtime=0.5)
    got = mixed.run(job, 70)
    assert got["read"]["seconds"] >= 0.5 and got["read"]["seconds"] == got["write"]["seconds"]
    ops = got["read"]["ops"] + got["write"]["ops"]
    assert 0 < ops < 64 * MiB // (64 * KiB)
    assert got["read"]["bytes"] + got["write"]["bytes"] == ops * 64 * KiB
