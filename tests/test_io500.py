"""IO500's phases as a campaign: config, the phases' pure logic (interleave, wear-out, score), the phases run for
real on a folder (stonewall and wear-out), and one small campaign on a loop-mounted ext4 of the test's own."""

import copy
import errno
import math
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from fsbench.campaign.cells import CellSpec, io500_places
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.history import store
from fsbench.io500 import launch
from fsbench.io500 import phases as ph
from fsbench.io500.table import markdown, table
from fsbench.toolkit.sizes import format_size

from conftest import IO500_SMALL as IO500
from conftest import REPO, needs_root, run_campaign


def campaign(path, **over) -> dict:
    c = {
        "campaign": "io5",
        "arrays": {"p": {"kind": "path", "path": str(path)}},
        "io": {"size": "4MiB", "repeats": 1},  # a few blocks: latency percentile curves need more than one
        "history": False,
        "io500": copy.deepcopy(IO500),
    }
    return c | over


# --- config


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c["io500"]["ior-hard"].update(segmentCount=-1), r"'io500.ior-hard.segmentCount': value -1 .*from 1"),
        (lambda c: c["io500"]["mdtest-easy"].update(n=0), r"'io500.mdtest-easy.n': value 0 "),
        (lambda c: c["io500"].update(processes=0), r"'io500.processes': value 0 "),
        (lambda c: c["io500"]["ior-easy"].update(blockSize="1000KiB"), r"'io500.ior-easy.blockSize'.*multiple of"),
        (lambda c: c["io500"]["ior-easy"].update(transferSize="lots"), r"'io500.ior-easy.transferSize': value 'lots'"),
        (lambda c: c["io500"].update({"stonewall-time": 0}), r"'io500.stonewall-time': value 0 "),
        (lambda c: c["io500"].update(segmentCount=3), r"'io500.segmentCount' is not known"),
        (lambda c: c["io"].update(read_from="neighbour"), r"'io.read_from': value 'neighbour'.*self or other"),
        (
            lambda c: c.update(arrays={"d": {"kind": "loop", "size": "64MiB"}}),
            r"'io500': value 'arrays.d: raw'.*a raw target has none",
        ),
        (
            lambda c: (
                c.update(arrays={"d": {"kind": "loop", "size": "64MiB"}}, filesystems={"e": {"type": "ext4"}})
                or c["io500"]["ior-easy"].update(blockSize="64MiB")
            ),
            r"'arrays.d.size': value '64MiB' .*at least 1\d\dMiB for what io500's phases write",
        ),
        (
            lambda c: (
                c.update(
                    arrays={"d": {"kind": "loop", "size": "2GiB"}},
                    filesystems={"e": {"type": "ext4", "mkfs": ["-T", "largefile4"]}},
                )
                or c["io500"]["mdtest-easy"].update(n=1000)
            ),
            r"'filesystems.e.mkfs'.*at least 2\d\d\d inodes for io500's files",
        ),
    ],
)
def test_bad_io500_settings_are_refused_naming_key_value_and_what_is_allowed(tmp_path, change, message):
    c = campaign(tmp_path)
    change(c)
    with pytest.raises(ConfigError, match=message):
        validate(c)


def test_io500_settings_in_bytes_and_where_the_phases_run(tmp_path):
    c = validate(campaign(tmp_path))
    assert c["io500"]["ior-easy"] == {"transferSize": 64 * 2**10, "blockSize": 2**20}
    assert io500_places(c) == [("local", "p", "path")]
    both = validate(
        campaign(tmp_path, hosts=["n1", "n2"])
        | {"arrays": {"p": {"kind": "path", "path": str(tmp_path)}, "d": {"kind": "loop", "size": "256MiB"}}}
        | {"filesystems": {"e": {"type": "ext4"}}}
    )
    # a path array from every host at once; each host's own filesystem; never raw
    assert io500_places(both) == [("all", "p", "path"), ("n1", "d", "e"), ("n2", "d", "e")]
    spec = Plan(both).cell_spec("all", "p", "path", "io500", 1)
    assert spec["read_from"] == "other" and spec["io500"]["processes"] == 2


def test_a_path_array_needs_neither_raw_nor_a_filesystem(tmp_path):
    validate({"arrays": {"p": {"kind": "path", "path": str(tmp_path)}}, "raw": False})
    with pytest.raises(ConfigError, match="'filesystems'.*for arrays d"):
        validate({"arrays": {"d": {"kind": "loop"}}, "raw": False})


def test_empty_files_and_warm_metadata_enter_params_only_when_set(tmp_path):
    base = {"arrays": {"p": {"kind": "path", "path": str(tmp_path)}}, "io": {"repeats": 1}}
    meta = {"files": 10, "file_size": "4KiB", "dirs": 1}
    old = Plan(validate(base | {"metadata": meta})).cell_spec("local", "p", "path", "meta-10f-4KiB-1d-end-1s", 1)
    assert "meta_cache" not in old and "io500" not in old and "read_from" not in old
    c = validate(base | {"metadata": meta | {"file_size": 0, "cache": "warm"}})
    assert c["metadata"]["file_size"] == 0 and format_size(0) == "0B"
    spec = Plan(c).cell_spec("local", "p", "path", "meta-10f-0B-1d-end-1s", 1)
    assert spec["file_size"] == 0 and spec["meta_cache"] == "warm"


# --- the phases' logic


def test_ior_hard_interleaves_every_process_segment_by_segment_without_gaps():
    n, segments = 3, 4
    offsets = sorted(ph.ior_hard_offset(r, s, n) for r in range(n) for s in range(segments))
    assert offsets == [k * 47008 for k in range(n * segments)]
    # segment 1 begins after every process's transfer of segment 0, in rank order
    assert [ph.ior_hard_offset(r, 1, n) for r in range(n)] == [3 * 47008, 4 * 47008, 5 * 47008]


def test_reads_go_to_the_next_host_or_on_one_host_the_next_process():
    assert ph.read_shift(4, 2, "other") == 4 and ph.read_shift(4, 1, "other") == 1 and ph.read_shift(4, 2, "self") == 0
    assert [ph.partner(r, 8, 4) for r in range(8)] == [4, 5, 6, 7, 0, 1, 2, 3]
    assert [ph.partner(r, 2, 1) for r in range(2)] == [1, 0]


def test_wear_out_writes_on_to_the_furthest_but_not_past_the_limit():
    assert ph.wear_out([3, 9, 5], 100) == 9
    assert ph.wear_out([3, 9, 5], 7) == 7


def test_find_finds_as_io500s_find_named_01_of_mdtest_hard_size_newer_than_the_timestamp(tmp_path):
    from fsbench.io500.run import _find, finder, prepare, timestamp

    prepare(tmp_path, 2)
    newer = timestamp(tmp_path).stat().st_mtime_ns
    hard = tmp_path / "mdtest-hard"
    for r in range(2):
        for i in range(120):  # file.mdtest.0.101 and file.mdtest.1.101 match *01*; file.mdtest.0.10 does not
            (hard / ph.mdtest_name(r, i)).write_bytes(b"x" * ph.MDTEST_HARD_BYTES)
    (hard / "file.mdtest.0.101").write_bytes(b"short")  # the right name, the wrong size
    (tmp_path / "mdtest-easy" / "rank0" / "file.mdtest.0.1012").touch()  # the right name, empty: mdtest-easy's
    old = hard / "file.mdtest.9.201"
    old.write_bytes(b"x" * ph.MDTEST_HARD_BYTES)
    os.utime(old, ns=(newer - 10**9, newer - 10**9))  # older than the timestamp
    rank0, rank1 = _find(tmp_path, 0, finder(newer)), _find(tmp_path, 1, finder(newer))
    assert rank0 == (2 * 120 + 1 + 1 + 1, 1) and rank1 == (0, 0)  # looked at: hard, easy's one, old, ior-hard's file
    assert ph.find_matches(2, 120) == 2 and ph.find_matches(2, 15) == 0
    assert ph.find_matches(1, 1000) == sum("01" in f"file.mdtest.0.{i}" for i in range(1000)) == 9


def test_the_scanner_looks_at_regular_files_stats_only_matching_names_and_hands_back_subdirectories(tmp_path):
    from fsbench.engines.loops import Scanner

    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "x01").write_bytes(b"abc")  # matches, right size, new
    (tmp_path / "x02").write_bytes(b"abc")  # the wrong name
    (tmp_path / "y01").write_bytes(b"ab")  # the wrong size
    (tmp_path / "link01").symlink_to(tmp_path / "x01")  # not a regular file: not looked at
    old = tmp_path / "z01"
    old.write_bytes(b"abc")
    os.utime(old, ns=(10**18, 10**18))
    newer = 10**18 + 1  # after z01, before the others (made now, after 2001-09-09)
    looked, found, subdirs = Scanner("*01*", 3, newer).scan(str(tmp_path))
    assert (looked, found, subdirs) == (4, 1, [str(tmp_path / "sub")])
    with pytest.raises(OSError, match="No buffer space"):  # its subdirectories' names do not fit
        Scanner("*01*", 3, newer, dirs_cap=2).scan(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        Scanner("*01*", 3, newer).scan(str(tmp_path / "nowhere"))


def test_score_is_the_root_of_the_geometric_means_and_validity_follows_the_phases():
    values = dict(zip(ph.PHASES, [2.0, 10.0, 0.5, 5.0, 100.0, 4.0, 50.0, 1.0, 40.0, 20.0, 8.0, 16.0], strict=True))
    figures = {p: ph.Figure(p, v, 1.0, True, "") for p, v in values.items()}
    bw, md, score = ph.score(figures)
    assert round(bw.value, 4) == round((2.0 * 0.5 * 4.0 * 1.0) ** 0.25, 4)
    md_values = [values[p] for p in ph.MD]
    assert round(md.value, 4) == round(math.prod(md_values) ** (1 / len(md_values)), 4)
    assert round(score.value, 4) == round(math.sqrt(bw.value * md.value), 4) and score.valid
    figures["mdtest-hard-write"] = ph.Figure("mdtest-hard-write", 5.0, 1.0, False, "short")
    assert [f.valid for f in ph.score(figures)] == [True, False, False]
    assert ph.reasons("ior-easy-write", 400.0, 300) == []
    assert "under the list's 300 s" in ph.reasons("ior-easy-write", 400.0, 30)[0]
    assert ph.reasons("ior-easy-read", 1.0, None) == []


# --- the phases for real, on a folder


@needs_root  # the reads drop the kernel's caches
def test_a_stonewalled_write_stops_then_every_process_writes_on_to_the_furthest(tmp_path):
    """Limits far beyond what 0.02 s allows: every write phase stops at the stonewall, then all processes end
    with as much as the furthest had then; the phases after read, stat and delete all of it."""
    data = tmp_path / "data"
    data.mkdir()
    io500 = {
        "processes": 2,
        "ior-easy": {"transferSize": "4KiB", "blockSize": "64MiB"},
        "ior-hard": {"segmentCount": 100000},
        "mdtest-easy": {"n": 1000000},
        "mdtest-hard": {"n": 1000000},
        "stonewall-time": 0.02,
    }
    c = validate(campaign(data, io500=io500))
    cell = CellSpec.from_params(Plan(c).cell_spec("local", "p", "path", "io500", 1))
    before, records = {"step": "prepare_array"}, {}
    for phase in ph.PHASES:
        before = records[phase] = launch.phase_step(cell, phase, before, [], tmp_path / "hosts")
        if phase == "find":  # every mdtest file there, named as mdtest names it: file.mdtest.<rank>.<i>
            easy = {(p.parent.name, re.sub(r"\d+$", "i", p.name)) for p in data.rglob("mdtest-easy/*/*")}
            hard = {re.sub(r"\d+$", "i", p.name) for p in data.rglob("mdtest-hard/*")}
            assert easy == {("rank0", "file.mdtest.0.i"), ("rank1", "file.mdtest.1.i")}
            assert hard == {"file.mdtest.0.i", "file.mdtest.1.i"}
    for phase in ph.WRITES:
        procs = records[phase]["hosts"]["local"]["processes"]
        at_wall = [q["at_stonewall"] for q in procs]
        assert 0 < max(at_wall) < run_limit(cell, phase)  # the stonewall stopped it, not its limit
        assert {q["items"] for q in procs} == {max(at_wall)}  # wear-out: all as far as the furthest
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= 2:  # each process bound to a CPU of its own, as mpirun binds IO500's ranks
            assert [q["cpu"] for q in procs] == cpus[:2]
        if phase.startswith("mdtest"):  # each file timed (loops.c's file loop), before the stonewall and after
            assert [q["latency"]["count"] for q in procs] == [q["items"] for q in procs]
        assert "stonewall-time 0.02 s is under the list's 300 s" in records[phase]["invalid_reasons"]
    made = records[ph.PHASES[-1]]["items"]
    assert records["ior-easy-read"]["amount"] == records["ior-easy-write"]["amount"]
    assert (
        records["ior-hard-read"]["amount"] == records["ior-hard-write"]["amount"] == made["ior-hard-write"] * 2 * 47008
    )
    assert records["find"]["amount"] == 2 * (made["mdtest-easy-write"] + made["mdtest-hard-write"]) + 2 + 1
    assert records["find"]["found"] == ph.find_matches(2, made["mdtest-hard-write"])
    assert records["mdtest-hard-delete"]["amount"] == 2 * made["mdtest-hard-write"]
    assert not list(data.iterdir())  # the last phase leaves nothing


def test_a_process_that_fails_under_stonewall_ends_the_phase_at_once_and_the_rerun_starts_afresh(
    ram_scratch, monkeypatch
):
    """Rank 1 runs out of space (ENOSPC, raised at its 4th ior-hard transfer) while rank 0 writes on towards a
    5 s stonewall: the phase ends at once, one line naming the host, the rank and the error, no process left.
    The rerun finds posts of that attempt and of an older one in .sync/ior-hard-write and ignores them."""
    from fsbench.io500.run import Io500Error, sync_dir

    data = ram_scratch / "data"
    data.mkdir()
    io500 = copy.deepcopy(IO500) | {"ior-hard": {"segmentCount": 20000}, "stonewall-time": 5}
    cell = CellSpec.from_params(Plan(validate(campaign(data, io500=io500))).cell_spec("local", "p", "path", "io500", 1))
    records = ram_scratch / "hosts"
    before = launch.phase_step(cell, "ior-easy-write", {"step": "prepare_array"}, [], records)
    real_pwrite, fails_at = os.pwrite, ph.ior_hard_offset(1, 3, 2)

    def pwrite(fd, buf, offset):
        if offset == fails_at and os.readlink(f"/proc/self/fd/{fd}").endswith("ior-hard/file"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_pwrite(fd, buf, offset)

    monkeypatch.setattr(os, "pwrite", pwrite)  # in the forked ranks too
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the phase hangs"))
    signal.alarm(30)
    t0 = time.monotonic()
    try:
        with pytest.raises(Io500Error) as failed:
            launch.phase_step(cell, "ior-hard-write", before, [], records)
    finally:
        signal.alarm(0)
    assert time.monotonic() - t0 < 4  # at once: before rank 0 reached its stonewall
    assert re.fullmatch(
        r"io500 ior-hard-write failed: host \S+ rank 1: OSError: \[Errno 28\] No space left on device",
        str(failed.value),
    )
    assert multiprocessing.active_children() == []
    sync = sync_dir(data / "fsbench-io5-p-io500", "ior-hard-write")
    assert sorted(os.listdir(sync)) == ["1.failed"]
    (sync / "0").write_text("19999")  # what an attempt killed in its wear-out leaves
    monkeypatch.undo()
    again = launch.phase_step(cell, "ior-hard-write", before, [], records)
    procs = again["hosts"]["local"]["processes"]
    at_wall = [q["at_stonewall"] for q in procs]
    assert 0 < max(at_wall) < 20000 and {q["items"] for q in procs} == {max(at_wall)}


def test_a_rank_waiting_at_the_stonewall_stops_at_its_deadline_or_at_a_failure_posted(tmp_path):
    from fsbench.io500.run import Io500Error, PeerFailed, _post_and_wait, _post_failure

    t0 = time.monotonic()
    with pytest.raises(Io500Error, match=r"rank\(s\) \[1\] posted no count"):
        _post_and_wait(tmp_path, 0, 2, 5, deadline=t0 + 0.2)
    assert time.monotonic() - t0 < 1
    _post_failure(tmp_path, 1, "host n2 rank 1: OSError: [Errno 28] No space left on device")
    with pytest.raises(PeerFailed, match=r"^host n2 rank 1: OSError"):
        _post_and_wait(tmp_path, 0, 2, 5, deadline=time.monotonic() + 60)


def run_limit(cell, phase):
    from fsbench.io500.run import limit_of

    return limit_of({"io500": cell.io500}, phase)


# --- one small campaign on a loop-mounted ext4 of the test's own


@pytest.fixture
def ext4_path(scratch):
    image, mnt = scratch / "fs.img", scratch / "mnt"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "128M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-d", str(mnt)], check=False)


@needs_root
def test_an_io500_campaign_on_a_path_array_writes_every_phase_bw_md_and_score(ext4_path, scratch, tmp_path):
    data = ext4_path / "data"
    data.mkdir()
    c = campaign(data, scratch=str(scratch / "s"))
    c["io500"]["stonewall-time"] = 5  # far beyond these sizes: every phase writes all it may
    c["io"] |= {"streams": [2], "read_from": "other"}  # the block I/O cell too reads the other stream's file
    c["history"] = str(tmp_path / "history.sqlite")
    run_campaign(tmp_path, c)
    res = tmp_path / "results" / "io5"
    df = pd.read_csv(res / "io500.csv", keep_default_na=False)
    assert list(df.columns) == ["target", "phase", "value", "unit", "seconds", "valid", "invalid_reasons"]
    assert list(df["phase"]) == [*ph.PHASES, "bw", "md", "score"] and set(df["target"]) == {"path"}
    v = df.set_index("phase")
    units = {p: ("GiB/s" if p.startswith("ior-") else "kIOPS") for p in ph.PHASES} | {"bw": "GiB/s", "md": "kIOPS"}
    assert v["unit"].drop("score").to_dict() == units and v.loc["score", "unit"] == ""
    values = v["value"].astype(float)
    assert (values > 0).all() and (v["seconds"].astype(float) > 0).all()
    assert round(values["score"], 4) == round(math.sqrt(values["bw"] * values["md"]), 4)
    assert round(values["bw"], 4) == round(math.prod(values[list(ph.IOR)]) ** 0.25, 4)
    for p in ph.WRITES:  # short writes: never valid for the list, and it says why
        assert not v.loc[p, "valid"] and "under the list's 300 s" in v.loc[p, "invalid_reasons"]
    assert not v.loc["score", "valid"]
    runs = res / "runs" / "local" / "p" / "path" / "io500" / "rep1"
    rec = {p: pd.read_json(runs / f"{p}.json", typ="series") for p in ph.PHASES}
    assert rec["find"]["amount"] == 2 * (20 + 15) + 2 + 1  # what mdtest-easy and -hard made, and the ior files
    assert rec["find"]["found"] == ph.find_matches(2, 15) and rec["find"]["valid"]
    assert rec["ior-easy-write"]["amount"] == 2 * 2**20 == rec["ior-easy-read"]["amount"]
    reads = rec["ior-easy-read"]["hosts"]["local"]
    assert [(q["rank"], q["of_rank"]) for q in reads["processes"]] == [(0, 1), (1, 0)]  # the other stream's file
    assert reads["cached_before"] <= 0.02  # cold, and measured so
    assert "## IO500 phases" in (res / "summary.md").read_text()
    io_read = pd.read_json(res / "runs/local/p/path/seq-1MiB-buffered-2s/rep1/read.json", typ="series")
    assert [(w["stream"], w["written_by"]) for w in io_read["read_from"]] == [(0, "stream 1"), (1, "stream 0")]
    assert io_read["read_from"][0]["read"].endswith("-1.dat") and io_read["row"]["bytes"] == 2 * 4 * 2**20
    assert os.listdir(data) == []
    # the results store: each phase a series of its own in the phase's unit, in the run of the block I/O cell
    stored = store.load(c["history"])
    phases = {r["op"]: r for r in stored if r["workload"] == "io500"}
    assert sorted(phases) == sorted(ph.PHASES) and len({r["series"] for r in phases.values()}) == 12
    assert {r["run"] for r in stored} == {next(iter(phases.values()))["run"]}  # one run: io rows and phases
    for p, r in phases.items():
        assert r[("gib_s" if p.startswith("ior-") else "kiops")] == pytest.approx(values[p], rel=1e-9)
        # judged by what doubts the figure: the short writes the list would not take are figures all the same
        assert r["valid"] and r["key"]["io500"]["mdtest-hard"] == {"n": 15}
        assert r["key"]["io500"]["stonewall-time"] == 5 and r["key"]["hosts"] == "local"
    argv = [sys.executable, "-m", "fsbench", "history", "series", "--store", c["history"]]
    env = os.environ | {"PYTHONPATH": str(REPO / "scripts")}
    listed = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    for p in ph.PHASES:  # every phase a series, the short writes the list would not take included
        assert any(line.endswith(f" local/p path io500 {p}") for line in listed.splitlines()), (p, listed)


@needs_root
def test_every_phase_runs_through_the_all_hosts_launcher(tmp_path):
    """The path a cluster takes (host all: `python -m fsbench io500-part` per host, here this host alone):
    every phase's host record comes back, reads name the process (and host) whose data they read."""
    from fsbench.cluster.hosts import short_hostname

    data = tmp_path / "data"
    data.mkdir()
    here = short_hostname()
    c = validate(campaign(data, hosts=[here]))
    cell = CellSpec.from_params(Plan(c).cell_spec("all", "p", "path", "io500", 1))
    before = {"step": "prepare_array"}
    for phase in ph.PHASES:
        before = launch.phase_step(cell, phase, before, [here], tmp_path / "hosts")
        assert list(before["hosts"]) == [here] and before["valid"] == (phase not in ph.WRITES), before
        if phase == "mdtest-hard-read":
            procs = before["hosts"][here]["processes"]
            assert [(q["rank"], q["of_rank"], q["of_host"]) for q in procs] == [(0, 1, here), (1, 0, here)]
            assert before["amount"] == 2 * 15
    assert not list(data.iterdir())


@needs_root  # the cold default drops the kernel's caches
def test_metadata_cache_warm_drops_nothing_and_empty_files_are_made(tmp_path):
    """metadata.cache warm (as mdtest runs) says so in the record; cold drops before stat and read."""
    from fsbench.measurement import steps

    base = {"arrays": {"p": {"kind": "path", "path": str(tmp_path)}}, "io": {"repeats": 1}, "scratch": str(tmp_path)}
    found = {}
    for how in ("warm", "cold"):
        c = validate(base | {"metadata": {"files": 20, "file_size": 0, "dirs": 1, "cache": how}})
        cell = CellSpec.from_params(Plan(c).cell_spec("local", "p", "path", "meta-20f-0B-1d-end-1s", 1))
        setup = steps.prepare_array(cell.array_spec, "p", "local", cell.workdir)
        found[how] = steps.metadata_step(cell, setup, cell.workdir)
    assert set(found["warm"]["cold"].values()) == {"warm: no drop (metadata.cache warm)"}
    assert all("drop_caches" in v for v in found["cold"]["cold"].values())
    rows = {r["op"]: r for r in found["warm"]["rows"]}
    assert rows["create"]["ops"] == 20 and rows["read"]["bytes"] == 0


def test_io500_csv_rows_and_the_phase_by_phase_comparison_of_targets():
    """table(): 15 rows per target in IO500's order; the summary section names each target's score and, per
    phase, the fastest target and the others' ratios to it."""
    records = []
    for target, scale in (("ext4", 1.0), ("ext4-noatime", 2.0)):
        for p in ph.PHASES:
            value = scale * (0.5 if p == "mdtest-hard-write" and target == "ext4-noatime" else 1.0)
            cell = {"host": "local", "array": "d", "target": target}
            records.append(
                {"cell": cell, "phase": p, "value": value, "seconds": 1.0, "valid": True, "invalid_reasons": ""}
            )
    df = table(records)
    assert list(df["target"].unique()) == ["ext4", "ext4-noatime"] and len(df) == 30
    assert list(df[df.target == "ext4"]["phase"]) == [*ph.PHASES, "bw", "md", "score"]
    md = markdown(df)
    assert "### ext4: score 1" in md and "### ext4-noatime: score" in md
    assert "- mdtest-hard-write: fastest ext4 (1); ext4-noatime 1.00×" in md
    assert "- ior-easy-write: fastest ext4-noatime (2); ext4 0.50×" in md
