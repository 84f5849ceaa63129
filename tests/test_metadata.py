"""The metadata test: fsbench.engines.metadata on real files (every phase, its rows and latencies, the inode and space
checks, a full filesystem during create on a real tmpfs), and end to end on ext4, xfs and btrfs on one loop image
(every phase a row per repeat, ops = files × streams, the summary section and plot, nothing left behind)."""

import errno
import json
import os
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from fsbench.campaign.cells import MetaCell, cells
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.engines.metadata import METADATA_PHASES, MetadataError, MetaJob, check_room, run, run_phase

from conftest import RAM_ROOT, held, needs_root, private_scratch, run_campaign


def test_every_phase_moves_every_file_and_times_each_one(tmp_path):
    job = MetaJob(str(tmp_path), streams=2, files=300, file_size=4096, dirs=7, fsync="file")
    colds = []
    found = run(job, lambda: colds.append("cold") or "made cold")
    assert list(found["phases"]) == list(METADATA_PHASES) and found["cold"] == {
        "stat": "made cold",
        "read": "made cold",
    }
    assert colds == ["cold", "cold"]  # before stat and before read, not before create or delete
    for phase, figure in found["phases"].items():
        assert figure["ops"] == 600 and len(figure["streams"]) == 2
        assert figure["bytes"] == (600 * 4096 if phase in ("create", "read") else 0)
        lat = [figure[k] for k in ("lat_p50_us", "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_max_us")]
        assert 0 < lat[0] and lat == sorted(lat)
        assert all(s["latency"]["count"] == 300 for s in figure["streams"])
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:  # each stream bound to a CPU of its own
            assert [s["cpu"] for s in figure["streams"]] == cpus[:2]
        assert 0 < figure["seconds"] <= figure["seconds_durable"]
    assert list(tmp_path.iterdir()) == []  # every tree removed


class SlowListJob(MetaJob):
    """Stream 1 takes 0.3 s longer to set up (to say where its files are), and says when it was done."""

    def where(self, stream: int) -> tuple[str, str]:
        if stream == 1:
            time.sleep(0.3)
            Path(self.root, "listed").write_text(repr(time.time()))
        return super().where(stream)


@pytest.mark.parametrize("phase", METADATA_PHASES)
def test_no_stream_starts_its_clock_before_every_stream_is_set_up(tmp_path, phase):
    """The start line is after each stream's set-up (its paths, its data), as mdtest's barrier is before its timer:
    a stream that began while another still made its list stretched the phase by that lag (the stat phase, the
    shortest, read ~0.5 of mdtest's rate partly from it)."""
    from fsbench.engines.metadata import make_trees

    job = SlowListJob(str(tmp_path / "t"), streams=2, files=50, file_size=16, dirs=1, fsync="none")
    Path(job.root).mkdir()
    make_trees(job)
    for before in METADATA_PHASES[: METADATA_PHASES.index(phase)]:
        run_phase(job, before)
    figure = run_phase(job, phase)
    listed = float(Path(job.root, "listed").read_text())
    assert all(s["start"] >= listed for s in figure["streams"]), (listed, [s["start"] for s in figure["streams"]])
    assert figure["seconds"] < 0.3  # the list's lag is outside the phase's time


def test_files_are_spread_over_the_streams_own_dirs_and_hold_distinct_data(tmp_path):
    job = MetaJob(str(tmp_path), streams=2, files=20, file_size=64, dirs=3)
    from fsbench.engines.metadata import make_trees

    make_trees(job)
    run_phase(job, "create")
    made = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("f*"))
    # named as mdtest names its files: on ext4 the names' shape moves the create rate (metadata method 4)
    assert made == sorted(f"stream{s}/d{i % 3}/file.mdtest.{s}.{i}" for s in (0, 1) for i in range(20))
    assert all(Path(job.path(s, i)).is_file() for s in (0, 1) for i in range(20))
    contents = {p.read_bytes() for p in tmp_path.rglob("f*")}
    assert len(contents) == 40 and all(len(c) == 64 for c in contents)  # no two files alike (stamped)
    read = run_phase(job, "read")
    assert read["bytes"] == 40 * 64
    run_phase(job, "delete")
    assert not list(tmp_path.rglob("f*"))


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A tmpfs of 200 inodes and 2 MiB, ours, always unmounted."""
    where = tmp_path / "tiny"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,nr_inodes=200", "fsbench-test", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@needs_root
def test_too_few_inodes_or_too_little_space_is_refused_before_the_first_file(tiny_tmpfs):
    with pytest.raises(MetadataError, match=r"not enough free inodes under .*needs 1002 .*199 are free of 200"):
        check_room(MetaJob(str(tiny_tmpfs), 1, 1000, 16, 1))
    with pytest.raises(MetadataError, match=r"not enough space under .*needs up to 3072000 bytes"):
        check_room(MetaJob(str(tiny_tmpfs), 1, 150, 16384, 1))
    assert list(tiny_tmpfs.iterdir()) == []


@needs_root
def test_a_filesystem_that_fills_during_create_fails_the_phase_by_name(tiny_tmpfs):
    """Past the check (run_phase alone), the kernel's ENOSPC on the 200th inode: the phase fails naming why."""
    job = MetaJob(str(tiny_tmpfs), streams=2, files=150, file_size=16, dirs=1)
    from fsbench.engines.metadata import make_trees, remove_trees

    make_trees(job)
    try:
        with pytest.raises(MetadataError, match="create failed in .* stream.*ran out of space or inodes"):
            run_phase(job, "create")
    finally:
        remove_trees(job)
    assert list(tiny_tmpfs.iterdir()) == []
    assert errno.ENOSPC  # the kernel's answer the message stands for


GOOD = {
    "campaign": "m",
    "scratch": "/var/tmp/fsbench-meta-test",
    "arrays": {"a": {"kind": "loop", "size": "1GiB"}},
    "filesystems": {"ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}},
    "io": {"size": "64MiB", "block_sizes": ["1MiB"], "repeats": 2},
    "metadata": {"files": 1000},
}


def test_metadata_cells_for_every_filesystem_target_not_raw_and_their_paths():
    c = validate(GOOD)
    assert c["metadata"] == {"files": 1000, "file_size": 4096, "dirs": 10, "fsync": "end"}
    meta = [x for x in cells(c) if isinstance(x, MetaCell)]
    assert [(x.target, x.rep, x.test) for x in meta] == [
        (t, r, "meta-1000f-4KiB-10d-end-1s") for t in ("ext4", "xfs") for r in (1, 2)
    ]
    assert MetaCell.from_wildcards("local", "a", "xfs", meta[0].test, 2) == meta[-1]
    plan = Plan(c)
    spec = plan.cell_spec("local", "a", "xfs", meta[0].test, "1")
    assert spec["workload"] == "metadata" and (spec["files"], spec["file_size"], spec["dirs"]) == (1000, 4096, 10)
    # After the block I/O cells of its target, in each round.
    io = plan.tests[0]
    assert plan.priority("local", "a", "xfs", io, 1) > plan.priority("local", "a", "xfs", meta[0].test, 1)
    assert plan.priority("local", "a", "xfs", meta[0].test, 1) > plan.priority("local", "a", "raw", io, 2)
    assert not [x for x in cells(validate(GOOD | {"metadata": None})) if isinstance(x, MetaCell)]


@pytest.mark.parametrize(
    ("metadata", "fs", "message"),
    [
        ({"files": 0}, None, r"'metadata.files': value 0"),
        ({"dirs": 0}, None, r"'metadata.dirs': value 0"),
        ({"file_size": "4Q"}, None, r"'metadata.file_size': value '4Q'"),
        ({"fsync": "always"}, None, r"'metadata.fsync': value 'always'.*one of none .*, file .*, end"),
        ({"flies": 3}, None, r"'metadata.flies' is not known \(did you mean 'files'\?\)"),
        ({"files": 20000}, {"type": "ext3", "mkfs": ["-T", "largefile4"]}, r"'filesystems.e.mkfs'.*20027 inodes"),
        ({"files": 200000, "file_size": "16KiB"}, None, r"'arrays.a.size'.*for the metadata test"),
    ],
)
def test_bad_metadata_settings_are_refused_naming_the_key(metadata, fs, message):
    config = GOOD | {"metadata": metadata} | ({"filesystems": {"e": fs}} if fs else {})
    with pytest.raises(ConfigError, match=message):
        validate(config)


# End to end ------------------------------------------------------------------------------------------------------

FILES = 1500


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """ext4, xfs and btrfs on one RAM-backed loop image, the metadata test with 2 streams, 2 repeats."""
    work = tmp_path_factory.mktemp("meta")
    with private_scratch(RAM_ROOT) as scratch:
        config = {
            "campaign": "meta",
            "scratch": str(scratch),
            "arrays": {"ram": {"kind": "loop", "size": "512MiB"}},
            "raw": False,
            "filesystems": {"ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}, "btrfs": {"type": "btrfs"}},
            "io": {"size": "16MiB", "block_sizes": ["1MiB"], "streams": [2], "repeats": 2},
            "metadata": {"files": FILES, "file_size": "4KiB", "dirs": 10},
        }
        run_campaign(work, config)
        assert not held(scratch)
        yield work / "results/meta"


@needs_root
@pytest.mark.e2e
def test_every_phase_of_every_filesystem_has_its_rows(campaign):
    df = pd.read_csv(campaign / "measurements.csv")
    meta = df[df["workload"] == "metadata"]
    assert set(df["workload"]) == {"io", "metadata"}
    assert len(meta) == 3 * 2 * 4  # targets × repeats × phases
    for (target, rep), rows in meta.groupby(["target", "rep"]):
        assert list(rows["op"]) == list(METADATA_PHASES), (target, rep)
        assert (rows["ops"] == FILES * 2).all() and (rows["files"] == FILES).all() and (rows["dirs"] == 10).all()
        assert (rows["iops"] > 0).all() and (rows["lat_p50_us"] <= rows["lat_p99_us"]).all()
        create = rows[rows["op"] == "create"].iloc[0]
        assert create["bytes"] == FILES * 2 * 4096 and create["seconds"] <= create["seconds_durable"]
        record = json.loads((Path(campaign).parents[1] / create["record"]).read_text())
        assert record["cold"]["stat"].startswith("sync") and "syncfs at the end" in record["command"]
    io = df[df["workload"] == "io"]
    assert len(io) == 3 * 2 * 2 and io["files"].isna().all()


@needs_root
@pytest.mark.e2e
def test_the_summary_and_the_plot_show_the_phases(campaign):
    summary = pd.read_csv(campaign / "summary.csv")
    meta = summary[summary["workload"] == "metadata"]
    assert len(meta) == 3 * 4 and (meta["unit"] == "files/s").all() and (meta["n"] == 2).all()
    assert sorted(meta["target"].drop_duplicates()) == ["btrfs", "ext4", "xfs"]
    assert all(list(rows["op"]) == list(METADATA_PHASES) for _, rows in meta.groupby("target"))
    assert (meta["ci95_low"] > 0).all()
    text = (campaign / "summary.md").read_text()
    assert "## Metadata: files per second" in text and "| target | create | stat | read | delete |" in text
    assert (
        "files/s [" in (campaign / "summary.html").read_text() or "files/s" in (campaign / "summary.html").read_text()
    )
    assert (campaign / "plots/metadata.png").stat().st_size > 10_000
    # Only block I/O is compared; the metadata rows stay out of comparisons.csv.
    comparisons = pd.read_csv(campaign / "comparisons.csv")
    assert not comparisons["op"].isin(["create", "stat", "delete"]).any()


@needs_root
@pytest.mark.e2e
def test_a_path_array_with_too_few_inodes_fails_cleanly_and_records_nothing(tiny_tmpfs, scratch, tmp_path):
    config = {
        "campaign": "tight",
        "scratch": str(scratch),
        "arrays": {"p": {"kind": "path", "path": str(tiny_tmpfs)}},
        "io": {"size": "1MiB", "block_sizes": ["1MiB"], "repeats": 1},
        "metadata": {"files": 1000, "file_size": "16B", "dirs": 2},
    }
    proc = run_campaign(tmp_path, config, check=False)
    assert proc.returncode != 0
    assert "fsbench: metadata of p/path/meta-1000f-16B-2d-end-1s rep 1: not enough free inodes" in proc.stderr
    assert not list((tmp_path / "results/tight/runs").rglob("metadata.json"))
    assert list(tiny_tmpfs.iterdir()) == [] and not held(scratch)


# --- loops.c's file loop itself (fsbench.engines.loops.FileLoop), which the metadata engine and io500 share


def test_the_file_loop_makes_stats_reads_and_deletes_each_file_timing_each_one(tmp_path):
    from fsbench.engines.loops import FileLoop

    folder = tmp_path / "100% sure {i}"  # a '%' or braces in the folder are taken as they are
    for d in range(3):
        (folder / f"d{d}").mkdir(parents=True)
    make = FileLoop("create", folder, "d{d}/f{i}", 30, dirs=3, file_size=16, data=b"x" * 16, stamp_base=1000)
    assert make.run() == 30 and make.moved == 30 * 16
    made = sorted(folder.rglob("f*"))
    assert len(made) == 30 and (folder / "d2" / "f29").exists()
    assert (folder / "d1" / "f7").read_bytes() == (1007).to_bytes(8, "little") + b"x" * 8  # stamped with its number
    for op in ("stat", "read", "delete"):
        loop = FileLoop(op, folder, "d{d}/f{i}", 30, dirs=3, file_size=16)
        assert loop.run(0, 10) == 10 and loop.run(10) == 20  # in two goes, as a stonewalled phase runs
        h = loop.hist
        assert h.count == sum(h.counts) == 30 and 0 < h.max_ns <= h.total_ns
        assert loop.moved == (30 * 16 if op == "read" else 0)
    assert not list(folder.rglob("f*"))


def test_mdtest_read_opens_each_file_for_writing_as_mdtest_does_and_read_does_not(tmp_path):
    """mdtest's read opens O_RDWR (mdtest.c passes O_RDONLY, 0, where its POSIX backend takes IOR_RDONLY; on
    CephFS that asks the MDS for write caps): io500's mdtest-hard-read too. fsbench's own read opens O_RDONLY.
    Seen by inotify: closing a file opened for writing is IN_CLOSE_WRITE, one opened read-only IN_CLOSE_NOWRITE."""
    import ctypes
    import struct

    from fsbench.engines.loops import FileLoop

    in_close_write, in_close_nowrite = 0x8, 0x10
    libc = ctypes.CDLL(None, use_errno=True)
    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"abc")
    for op, closed in (("mdtest-read", in_close_write), ("read", in_close_nowrite)):
        fd = libc.inotify_init1(os.O_NONBLOCK)
        assert fd >= 0 and libc.inotify_add_watch(fd, str(tmp_path).encode(), in_close_write | in_close_nowrite) >= 0
        try:
            loop = FileLoop(op, tmp_path, "f{i}", 3, file_size=3)
            assert loop.run() == 3 and loop.moved == 9
            events, got = os.read(fd, 4096), []
            while events:
                _, mask, _, size = struct.unpack_from("iIII", events)
                got.append(mask)
                events = events[16 + size :]
            assert got == [closed] * 3, (op, got)
        finally:
            os.close(fd)


def test_the_file_loop_names_the_failing_file_and_counts_those_before_it(tmp_path):
    from fsbench.engines.loops import FileLoop, WrongSize

    for i in range(5):
        (tmp_path / f"f{i}").write_bytes(b"abc" if i != 3 else b"abcd")
    read = FileLoop("read", tmp_path, "f{i}", 5, file_size=3)
    with pytest.raises(WrongSize, match=r"read 4 bytes of .*/f3, which was made with 3"):
        read.run()
    assert read.hist.count == 3
    stat = FileLoop("stat", tmp_path, "f{i}", 7)
    with pytest.raises(FileNotFoundError, match=r"No such file or directory: '.*/f5'") as e:
        stat.run()
    assert e.value.errno == errno.ENOENT and stat.hist.count == 5
    again = FileLoop("create", tmp_path, "f{i}", 5)
    with pytest.raises(FileExistsError, match=r"/f0"):  # O_EXCL: a create never reuses a file
        again.run()


def test_reading_empty_files_opens_and_closes_them_as_mdtest_does(tmp_path):
    """mdtest -E without -e opens and closes each file; a read call of ~2 us held fsbench's empty-file read phase
    to 0.83 of mdtest's (docs/bench-peers.md). So what an empty file holds is not read, nor checked."""
    from fsbench.engines.loops import FileLoop

    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"not read")
    read = FileLoop("read", tmp_path, "f{i}", 3, file_size=0)
    assert read.run() == 3 and read.moved == 0 and read.hist.count == 3


def test_the_file_loop_starts_no_file_after_its_deadline(tmp_path):
    from fsbench.engines.loops import FileLoop

    loop = FileLoop("create", tmp_path, "f{i}", 10**6)
    assert loop.run(0, 10**6, deadline_ns=time.monotonic_ns()) == 0
    done = loop.run(0, 10**6, deadline_ns=time.monotonic_ns() + 200_000_000)
    assert 0 < done < 10**6 and len(list(tmp_path.iterdir())) == done


def test_each_worker_is_bound_to_a_cpu_of_its_own_unless_they_outnumber_the_cpus():
    """As mpirun binds mdtest's and IOR's ranks: worker i of n on the i-th CPU this process may use; none bound
    where the workers outnumber those CPUs. Run in forked children (binding pytest itself would stay)."""
    import multiprocessing

    from fsbench.toolkit.system import pin_to_cpu

    def child(index, count, out):
        out.put((pin_to_cpu(index, count), sorted(os.sched_getaffinity(0))))

    cpus = sorted(os.sched_getaffinity(0))
    ctx = multiprocessing.get_context("fork")
    for index, count in ((0, len(cpus)), (len(cpus) - 1, len(cpus)), (0, len(cpus) + 1)):
        out = ctx.Queue()
        p = ctx.Process(target=child, args=(index, count, out))
        p.start()
        cpu, allowed = out.get()
        p.join()
        if count > len(cpus):
            assert cpu is None and allowed == cpus
        else:
            assert cpu == cpus[index] and allowed == [cpu]
