"""IO500's phases as a campaign: config, the phases' pure logic (interleave, wear-out, score), the phases run for
real on a folder (stonewall and wear-out), and one small campaign on a loop-mounted ext4 of the test's own."""

import copy
import errno
import math
import multiprocessing
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_history_io500 import append as append_phases
from test_history_io500 import config as history_config

from fsbench.campaign.cells import CellSpec, io500_places
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.history import store
from fsbench.io500 import launch
from fsbench.io500 import phases as ph
from fsbench.io500.result_files import read_summary
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
        (lambda c: c["io500"]["ior-easy"].update(transferSize=12), r"'io500.ior-easy.transferSize': value '?12.*of 8"),
        (lambda c: c["io500"].update({"stonewall-time": -1}), r"'io500.stonewall-time': value -1 "),
        (lambda c: c["io500"].update({"stonewall-time": 2.5}), r"'io500.stonewall-time': value 2.5 "),
        (lambda c: c["io500"].update({"drop-caches": "yes"}), r"'io500.drop-caches': value 'yes' "),
        (
            lambda c: c["io500"].update({"drop-caches-cmd": 'sh -c "echo 3'}),
            r"'io500.drop-caches-cmd': value 'sh -c \"echo 3' .*a command a shell could split \(No closing quotation\)",
        ),
        (lambda c: c["io500"].update({"drop-caches-cmd": []}), r"'io500.drop-caches-cmd': value \[\] .*none empty"),
        (lambda c: c["io500"].update({"drop-caches-cmd": ["x", ""]}), r"'io500.drop-caches-cmd'.*none empty"),
        (lambda c: c["io500"].update(dataPacketType="zero"), r"'io500.dataPacketType': value 'zero' .*timestamp"),
        (lambda c: c["io500"].update(mode="full"), r"'io500.mode': value 'full' .*standard or extended"),
        (
            lambda c: c["io500"].update({"ior-rnd4K-easy-read": {"run": "no"}}),
            r"'io500.ior-rnd4K-easy-read.run': value 'no' .*true \(io500's default\) or false",
        ),
        (lambda c: c["io500"].update({"ior-rnd4K-easy-read": {"API": "POSIX"}}), r"'io500.ior-rnd4K-easy-read.API' is"),
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


def test_a_partner_is_the_rank_so_many_on():
    assert [ph.partner(r, 8, 4) for r in range(8)] == [4, 5, 6, 7, 0, 1, 2, 3]
    assert [ph.partner(r, 2, 1) for r in range(2)] == [1, 0]


def test_wear_out_writes_on_to_the_furthest_but_not_past_the_limit():
    assert ph.wear_out([3, 9, 5], 100) == 9
    assert ph.wear_out([3, 9, 5], 7) == 7


def test_find_finds_as_io500s_find_named_01_of_mdtest_hard_size_newer_than_the_timestamp(tmp_path):
    from fsbench.io500.run import _find, finder, md_folder, prepare, timestamp

    prepare(tmp_path, 2)
    timestamp(tmp_path).touch()  # the timestamp phase's
    newer = timestamp(tmp_path).stat().st_mtime_ns
    hard = md_folder(tmp_path, "mdtest-hard")
    for r in range(2):
        for i in range(120):  # file.mdtest.0.101 and file.mdtest.1.101 match *01*; file.mdtest.0.10 does not
            (hard / ph.mdtest_name(r, i)).write_bytes(b"x" * ph.MDTEST_HARD_BYTES)
    (hard / "file.mdtest.0.101").write_bytes(b"short")  # the right name, the wrong size
    (md_folder(tmp_path, "mdtest-easy", 0) / "file.mdtest.0.1012").touch()  # the right name, empty: mdtest-easy's
    old = hard / "file.mdtest.9.201"
    old.write_bytes(b"x" * ph.MDTEST_HARD_BYTES)
    os.utime(old, ns=(newer - 10**9, newer - 10**9))  # older than the timestamp
    rank0, rank1 = _find("find", tmp_path, 0, finder("find", newer)), _find("find", tmp_path, 1, finder("find", newer))
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


# io500's own lists, from its source (IO500/io500 at 02091cf), not from the module under test:
# src/phase-definitions.h's order (mdworkbench's phases left out: fsbench does not run them) ...
IO500_ORDER = [
    "ior-easy-write", "mdtest-easy-write", "timestamp", "find-easy", "ior-hard-write", "mdtest-hard-write", "find",
    "find-hard", "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete",
    "mdtest-hard-read", "mdtest-hard-delete", "ior-rnd4K-easy-read",
]  # fmt: skip
# ... each phase's `.group` (src/phase_*.c; none: IO500_NO_SCORE or a dummy) and IO500_PHASE_FLAG_OPTIONAL
IO500_BW = {"ior-easy-write", "ior-hard-write", "ior-easy-read", "ior-hard-read"}
IO500_MD = {"mdtest-easy-write", "mdtest-hard-write", "find", "mdtest-easy-stat", "mdtest-hard-stat",
            "mdtest-easy-delete", "mdtest-hard-read", "mdtest-hard-delete", "find-easy", "find-hard"}  # fmt: skip
IO500_OPTIONAL = {"find-easy", "find-hard"}
IO500_ORDER_STANDARD = [p for p in IO500_ORDER if p not in IO500_OPTIONAL]
# the arguments that say whose data a phase reads: ior -C -Q <k>, mdtest -N 1 (src/phase_ior_*.c, phase_mdtest.c)
IO500_READ_FROM = {"ior-easy-read": ("node", 1), "ior-hard-read": ("node", 1), "ior-rnd4K-easy-read": ("node", 2)}
IO500_READ_FROM |= {p: ("rank", 1) for p in IO500_MD if p.startswith("mdtest") and not p.endswith("write")}
IO500_VERIFY = {"ior-easy-read", "ior-hard-read", "mdtest-hard-read"}  # -R, -X


def test_the_phase_table_is_io500s_order_groups_read_rules_and_checks():
    assert [p.name for p in ph.TABLE] == IO500_ORDER
    assert ph.order("extended") == tuple(IO500_ORDER)
    assert ph.order("standard") == tuple(p for p in IO500_ORDER if p not in IO500_OPTIONAL)
    assert {p.name for p in ph.TABLE if p.group == "BW"} == IO500_BW
    assert {p.name for p in ph.TABLE if p.group == "MD"} == IO500_MD
    assert {p.name for p in ph.TABLE if p.optional} == IO500_OPTIONAL
    assert {p.name: p.shift for p in ph.TABLE if p.shift} == IO500_READ_FROM
    assert {p.name for p in ph.TABLE if p.verify} == IO500_VERIFY
    # main.c: GiB/s where the name starts with "i"
    assert {p: ph.unit(p) for p in IO500_ORDER} == {p: "GiB/s" if p[0] == "i" else "kIOPS" for p in IO500_ORDER}


def test_on_one_host_ior_reads_its_own_file_and_mdtest_the_next_ranks():
    """IOR -C -Q 1: the tasks of the next node on, modulo all tasks (on one node: its own); mdtest -N 1: the next
    rank. ior-rnd4K-easy-read's -Q 2: two nodes on."""
    assert ph.read_shift("ior-easy-read", 2, 1, "other") == 0 and ph.read_shift("ior-hard-read", 4, 1, "other") == 0
    assert (
        ph.read_shift("mdtest-easy-stat", 2, 1, "other") == 1 and ph.read_shift("mdtest-hard-read", 4, 3, "other") == 1
    )
    assert (
        ph.read_shift("ior-easy-read", 4, 3, "other") == 4 and ph.read_shift("ior-rnd4K-easy-read", 4, 3, "other") == 8
    )
    assert (
        ph.read_shift("ior-rnd4K-easy-read", 4, 2, "other") == 0
        and ph.read_shift("mdtest-hard-stat", 2, 2, "self") == 0
    )


def test_score_is_io500s_calc_score_and_validity_is_where_io500_prints_invalid():
    values = dict(
        zip(ph.PHASES, [2.0, 10.0, 0.0, 0.5, 5.0, 100.0, 4.0, 50.0, 1.0, 40.0, 20.0, 8.0, 16.0, 3.0], strict=True)
    )
    figures = {p: ph.Figure(p, v, 1.0, True, "") for p, v in values.items()}
    bw, md, score = ph.score(figures)
    assert round(bw.value, 4) == round((2.0 * 0.5 * 4.0 * 1.0) ** 0.25, 4)  # not the unscored 4 KiB re-read's 3
    md_values = [values[p] for p in IO500_MD - IO500_OPTIONAL]
    assert round(md.value, 4) == round(math.prod(md_values) ** (1 / len(md_values)), 4)
    assert round(score.value, 4) == round(math.sqrt(bw.value * md.value), 4) and score.valid
    figures["mdtest-hard-write"] = ph.Figure("mdtest-hard-write", 0.0, 1.0, False, "Resulting score shouldn't be 0.0")
    bw, md, score = ph.score(figures)
    rest = [values[p] for p in IO500_MD - IO500_OPTIONAL - {"mdtest-hard-write"}]
    assert round(md.value, 4) == round(math.prod(rest) ** (1 / len(rest)), 4)  # a 0 is left out
    assert [f.valid for f in (bw, md, score)] == [False, False, False]  # io500's [SCORE ] line: one [INVALID]
    assert ph.invalid("ior-easy-write", 400.0, 1.0, 300) == []
    assert ph.invalid("ior-easy-write", 30.5, 1.0, 30) == ["Runtime is smaller than expected minimum runtime"]
    assert ph.invalid("mdtest-easy-write", 20.0, 1.0, 30) == [
        "Runtime of phase (20.000000) is below stonewall time. This shouldn't happen!",
        "Runtime is smaller than expected minimum runtime",
    ]
    assert ph.invalid("ior-easy-read", 1.0, 1.0, 300, errors=2) == [
        "Errors (2) occured during phase in IOR. This invalidates your run."
    ]
    assert ph.invalid("find", 1.0, 5.0, 300, found=0) == ["Find didn't find anything, this is likely invalid."]
    assert ph.invalid("timestamp", 0.001, 0.0, 300) == [] and ph.invalid("ior-rnd4K-easy-read", 1.0, 2.0, 300) == []


# --- the phases for real, on a folder


def test_a_stonewalled_write_stops_then_every_process_writes_on_to_the_furthest(ram_scratch):
    """Limits far beyond what 1 s allows: every write phase stops at the stonewall, then all processes end
    with as much as the furthest had then; the phases after read, stat and delete all of it."""
    tmp_path = ram_scratch
    data = tmp_path / "data"
    data.mkdir()
    io500 = {
        "processes": 2,
        "ior-easy": {"transferSize": "4KiB", "blockSize": "16GiB"},
        "ior-hard": {"segmentCount": 100000},
        "mdtest-easy": {"n": 1000000},
        "mdtest-hard": {"n": 1000000},
        "stonewall-time": 1,
    }
    c = validate(campaign(data, io500=io500))
    cell = CellSpec.from_params(Plan(c).cell_spec("local", "p", "path", "io500", 1))
    before, records = {"step": "prepare_array"}, {}
    for phase in ph.PHASES:
        before = records[phase] = launch.phase_step(cell, phase, before, [], tmp_path / "hosts")
        if phase == "find":  # every mdtest file there, named and placed as mdtest (-u for easy) names and places it
            files = {
                (p.parent.relative_to(p.parents[2]).as_posix(), re.sub(r"\d+$", "i", p.name))
                for family in ("mdtest-easy", "mdtest-hard")
                for p in data.rglob(f"{family}/*/*/*")
            }
            tree = "test-dir.0-0/mdtest_tree"
            easy = {(f"{tree}.0.0", "file.mdtest.0.i"), (f"{tree}.1.0", "file.mdtest.1.i")}
            assert files == easy | {(f"{tree}.0", "file.mdtest.0.i"), (f"{tree}.0", "file.mdtest.1.i")}
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
        assert "Runtime is smaller than expected minimum runtime" in records[phase]["invalid_reasons"]
        assert records[phase]["seconds"] >= 1 and records[phase]["doubts"] == ""
    made = records[ph.PHASES[-1]]["items"]
    assert records["ior-easy-read"]["amount"] == records["ior-easy-write"]["amount"]
    assert (
        records["ior-hard-read"]["amount"] == records["ior-hard-write"]["amount"] == made["ior-hard-write"] * 2 * 47008
    )
    assert records["find"]["amount"] == 2 * (made["mdtest-easy-write"] + made["mdtest-hard-write"]) + 2 + 1
    assert records["find"]["found"] == ph.find_matches(2, made["mdtest-hard-write"])
    assert records["mdtest-hard-delete"]["amount"] == 2 * made["mdtest-hard-write"]
    for phase in IO500_VERIFY:  # every transfer and file read back as written
        assert records[phase]["errors"] == 0 and records[phase]["valid"], records[phase]
    rnd = records["ior-rnd4K-easy-read"]  # 4 KiB reads at random blocks of ior-easy's files, to the stonewall
    procs = rnd["hosts"]["local"]["processes"]
    assert {q["items"] for q in procs} == {rnd["items_per_process"]}  # worn out to the furthest
    assert 0 < max(q["at_stonewall"] for q in procs) < ph.RND4K_SEGMENTS and rnd["seconds"] >= 1 and rnd["valid"]
    # how warm each read began, over the files as they are (tmpfs: all of it), not over what may be drawn
    assert records["ior-easy-read"]["hosts"]["local"]["cached_before"] == rnd["hosts"]["local"]["cached_before"] == 1
    assert rnd["amount"] == 2 * rnd["items_per_process"] * 4096
    assert not list(data.iterdir())  # the last phase leaves nothing


def test_the_ior_loop_writes_iors_timestamp_words_and_checks_every_word_read_back(tmp_path):
    """loops.c's fsb_ior: a transfer is the writer's stamp (rank, offset) then IOR's timestamp words (word w =
    hi | low + w); a read with verify counts a transfer whose any word differs, or that sits at another offset."""
    import array

    from fsbench.engines.loops import IorLoop, ShortTransfer

    t, path = 4096 + 8, tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        hi, low = ph.timestamp_words(3)
        IorLoop(fd, True, 3, ph.packet("timestamp", 3, t), base=0, stride=t).run(0, 4)
        words = array.array("Q", path.read_bytes()[:t])
        assert words[:2].tolist() == [3, 0] and words[2:].tolist() == [hi | (low + w) for w in range(2, t // 8)]
        with open(path, "r+b") as f:  # transfer 2: one bit of a word deep inside; transfer 3 has 1's stamp
            f.seek(2 * t + 3000)
            f.write(bytes([path.read_bytes()[2 * t + 3000] ^ 1]))
            f.seek(3 * t + 8)
            f.write(struct.pack("<q", t))
        reader = IorLoop(fd, False, 3, ph.packet("timestamp", 3, t), base=0, stride=t, verify=True, timestamp=(hi, low))
        assert reader.run(0, 4) == 4 and reader.bad == 2 and reader.first_bad == 2
        assert reader.first_bad_read == path.read_bytes()[2 * t : 3 * t] != reader.expected(2)
        with pytest.raises(ShortTransfer, match=f"at offset {4 * t}: 0 of {t} bytes"):
            reader.run(4, 5)
        other = IorLoop(fd, False, 3, ph.packet("offset", 3, t), base=0, stride=t, verify=True)
        assert other.run(0, 1) == 1 and other.bad == 1  # not the packet that was written
        assert IorLoop(fd, False, 3, b"x" * t, base=0, stride=t).run(0, 4, deadline_ns=1) == 0  # past its deadline
    finally:
        os.close(fd)


def test_ior_rnd4k_reads_random_blocks_with_replacement_as_ior_z_z_draws_them(tmp_path):
    """ior-rnd4K-easy-read's transfers (IOR -z -z): each at a block of the file drawn at random, with replacement,
    from (seed, transfer) alone: every block read, some again, in no order; each rank its own draw; and the reads
    are where offset() says (a check against the writer's stamps finds every one as written)."""
    from fsbench.engines.loops import IorLoop

    t, blocks, path = 4096, 8, tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        IorLoop(fd, True, 0, ph.packet("timestamp", 0, t), base=0, stride=t).run(0, blocks)
        packet, stamps = ph.packet("timestamp", 0, t), ph.timestamp_words(0)
        reader = IorLoop(fd, False, 0, packet, blocks=blocks, seed=5, verify=True, timestamp=stamps)
        assert reader.run(0, 300) == 300 and reader.run(300, 1000) == 700 and reader.moved == 1000 * t
        assert reader.bad == 0  # each read where offset(i) says: its stamp is that offset's
        offsets = [reader.offset(i) for i in range(1000)]
        assert set(offsets) == {b * t for b in range(blocks)} and offsets != sorted(offsets)
        other = IorLoop(fd, False, 1, packet, blocks=blocks, seed=6)
        assert [other.offset(i) for i in range(1000)] != offsets
    finally:
        os.close(fd)


def test_a_read_that_finds_other_data_than_was_written_is_invalid_and_says_where(tmp_path):
    """ior -R and mdtest -X as io500 passes them: a transfer (a file) that differs is counted, the phase marked
    [INVALID] in io500's words, and the doubt names the file and offset (the file) and the rank."""
    data = tmp_path / "data"
    data.mkdir()
    cell = CellSpec.from_params(Plan(validate(campaign(data))).cell_spec("local", "p", "path", "io500", 1))
    root, before, records = data / "fsbench-io5-p-io500", {"step": "prepare_array"}, {}
    for phase in ph.PHASES:
        if phase == "ior-easy-read":  # one byte of rank 0's third transfer (64 KiB each)
            with open(root / "ior-easy" / "file.0", "r+b") as f:
                f.seek(2 * 65536 + 100)
                f.write(b"\xff")
        if phase == "mdtest-hard-read":  # one byte of rank 1's file 7
            with open(root / "mdtest-hard/test-dir.0-0/mdtest_tree.0" / ph.mdtest_name(1, 7), "r+b") as f:
                f.seek(3000)
                f.write(b"\xff")
        before = records[phase] = launch.phase_step(cell, phase, before, [], tmp_path / "hosts")
    easy, hard = records["ior-easy-read"], records["mdtest-hard-read"]
    assert easy["errors"] == 1 and not easy["valid"]
    assert easy["invalid_reasons"] == "Errors (1) occured during phase in IOR. This invalidates your run."
    assert re.search(
        r"1 transfers read back wrong; the first, of rank 0: \S+/ior-easy/file.0 at offset 131072 ", easy["doubts"]
    )
    assert (
        hard["errors"] == 1
        and not hard["valid"]
        and "Errors (1) occured during phase in mdtest" in hard["invalid_reasons"]
    )
    where = r"\S+/mdtest-hard/test-dir.0-0/mdtest_tree.0/file.mdtest.1.7$"
    assert re.search(r"1 files read back wrong; the first, of rank 0: " + where, hard["doubts"])
    assert records["ior-hard-read"]["errors"] == 0 and records["ior-hard-read"]["valid"]


def test_a_process_that_fails_under_stonewall_ends_the_phase_at_once_and_the_rerun_starts_afresh(
    ram_scratch, monkeypatch
):
    """Rank 1 runs out of space (ENOSPC, raised at its 4th ior-hard transfer) while rank 0 writes on towards a
    3 s stonewall: the phase ends at once, one line naming the host, the rank and the error, no process left.
    The rerun finds posts of that attempt and of an older one in .sync/ior-hard-write and ignores them."""
    from fsbench.engines.loops import IorLoop
    from fsbench.io500.run import Io500Error, sync_dir

    data = ram_scratch / "data"
    data.mkdir()
    io500 = copy.deepcopy(IO500) | {"ior-hard": {"segmentCount": 200000}, "stonewall-time": 3}
    cell = CellSpec.from_params(Plan(validate(campaign(data, io500=io500))).cell_spec("local", "p", "path", "io500", 1))
    records = ram_scratch / "hosts"
    before = launch.phase_step(cell, "ior-easy-write", {"step": "prepare_array"}, [], records)
    real_run = IorLoop.run

    def run(self, first, last, deadline_ns=0):  # rank 1's transfers end at its 4th, as on a full disk
        if not (
            self.spec.write
            and self.spec.rank == 1
            and os.readlink(f"/proc/self/fd/{self.spec.fd}")[-13:] == "ior-hard/file"
        ):
            return real_run(self, first, last, deadline_ns)
        real_run(self, first, min(last, 3), deadline_ns)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(IorLoop, "run", run)  # in the forked ranks too
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the phase hangs"))
    signal.alarm(30)
    t0 = time.monotonic()
    try:
        with pytest.raises(Io500Error) as failed:
            launch.phase_step(cell, "ior-hard-write", before, [], records)
    finally:
        signal.alarm(0)
    assert time.monotonic() - t0 < 2.5  # at once: before rank 0 reached its stonewall
    assert re.fullmatch(
        r"io500 ior-hard-write failed: host \S+ rank 1: OSError: \[Errno 28\] No space left on device",
        str(failed.value),
    )
    assert multiprocessing.active_children() == []
    sync = sync_dir(data / "fsbench-io5-p-io500", "ior-hard-write")
    assert sorted(os.listdir(sync)) == ["1.failed"]
    (sync / "0").write_text("199999")  # what an attempt killed in its wear-out leaves
    monkeypatch.undo()
    again = launch.phase_step(cell, "ior-hard-write", before, [], records)
    procs = again["hosts"]["local"]["processes"]
    at_wall = [q["at_stonewall"] for q in procs]
    assert 0 < max(at_wall) < 199999 and {q["items"] for q in procs} == {max(at_wall)}
    # an mdtest write run again (its files of the attempt before still there) makes its files anew
    made = [launch.phase_step(cell, "mdtest-easy-write", again, [], records)["amount"] for _ in range(2)]
    assert made == [2 * 20, 2 * 20]


def test_a_rank_waiting_at_the_stonewall_stops_at_its_deadline_or_at_a_failure_posted(tmp_path):
    from fsbench.io500.run import Io500Error, PeerFailed, _post_and_wait, _post_failure

    t0 = time.monotonic()
    with pytest.raises(Io500Error, match=r"rank\(s\) \[1\] posted no count"):
        _post_and_wait(tmp_path, 0, 2, 5, deadline=t0 + 0.2)
    assert time.monotonic() - t0 < 1
    _post_failure(tmp_path, 1, "host n2 rank 1: OSError: [Errno 28] No space left on device")
    with pytest.raises(PeerFailed, match=r"^host n2 rank 1: OSError"):
        _post_and_wait(tmp_path, 0, 2, 5, deadline=time.monotonic() + 60)


def test_extended_mode_runs_find_easy_and_find_hard_and_adds_scorex_and_drop_caches_runs_its_command(tmp_path):
    """mode: extended runs io500's optional phases in its order: find-easy (pfind -name *01* on mdtest-easy),
    find-hard (-newer timestampfile -size 3901c -name *01* on mdtest-hard), scored in md only for scorex.
    drop-caches: true runs drop-caches-cmd (a string split as a shell would, no shell) before every phase but
    the timestamp."""
    data, marks = tmp_path / "data", tmp_path / "drops"
    data.mkdir()
    marks.mkdir()
    io500 = copy.deepcopy(IO500) | {"mode": "extended", "drop-caches": True}
    io500["drop-caches-cmd"] = f"mktemp -p '{marks}'"  # each drop leaves a file: they are counted
    cell = CellSpec.from_params(Plan(validate(campaign(data, io500=io500))).cell_spec("local", "p", "path", "io500", 1))
    before, records = {"step": "prepare_array"}, {}
    for phase in ph.order("extended"):
        before = records[phase] = launch.phase_step(cell, phase, before, [], tmp_path / "hosts")
    assert list(records) == IO500_ORDER and len(os.listdir(marks)) == len(IO500_ORDER) - 1
    assert records["find"]["hosts"]["local"]["cold"] == f"mktemp -p {marks}"
    easy, hard = records["find-easy"], records["find-hard"]
    assert easy["amount"] == 2 * 20 and easy["found"] == ph.find_matches(2, 20) == 0 and not easy["valid"]
    assert easy["invalid_reasons"] == "Find didn't find anything, this is likely invalid."  # io500's words
    assert hard["amount"] == 2 * 102 and hard["found"] == 2 and hard["valid"] and hard["doubts"] == ""
    df = table(list(records.values()))
    assert list(df["phase"]) == [*IO500_ORDER, "bw", "md", "score", "scorex"]
    v = df.set_index("phase")
    md_x = [v.loc[p, "value"] for p in IO500_MD]  # the optional finds too
    assert v.loc["scorex", "value"] == pytest.approx(
        math.sqrt(v.loc["bw", "value"] * math.prod(md_x) ** (1 / len(md_x)))
    )
    assert not v.loc["scorex", "valid"]  # find-easy is [INVALID]: io500's [SCOREX] line too


def result_txt(text: str) -> dict:
    """io500's result.txt as an io500 user's script reads it: {section: {key: value}}, comments left out."""
    found, section = {}, None
    for line in text.splitlines():
        if m := re.fullmatch(r"\[(.+)\]", line):
            section = found.setdefault(m[1], {})
        elif m := re.fullmatch(r"(\S+) += (.*)", line):
            section[m[1]] = m[2]
    return found


def test_fsbench_s_result_files_read_as_the_io500_application_s(tmp_path):
    """One parser (read_summary; result.txt's pairs) over the io500 application's files (tests/data, from io500
    at 02091cf with tiny settings, stonewall-time 1) and fsbench's of the same settings: the same phases in the
    same order, units, fields and score rows; fsbench's version and hashes are not io500's."""
    from fsbench.io500 import result_files

    theirs_dir = REPO / "tests" / "data" / "io500-02091cf"
    theirs = result_files.read_summary((theirs_dir / "result_summary.txt").read_text())
    data = tmp_path / "data"
    data.mkdir()
    io500 = copy.deepcopy(IO500) | {"stonewall-time": 1}
    cell = CellSpec.from_params(Plan(validate(campaign(data, io500=io500))).cell_spec("local", "p", "path", "io500", 1))
    before, records = {"step": "prepare_array"}, {}
    for phase in ph.PHASES:
        before = records[phase] = launch.phase_step(cell, phase, before, [], tmp_path / "hosts")
    written = result_files.write(list(records.values()), table(list(records.values())), tmp_path / "io500")
    ours = result_files.read_summary((tmp_path / "io500" / "path" / "result_summary.txt").read_text())
    assert written == [str(tmp_path / "io500" / "path" / n) for n in ("result_summary.txt", "result.txt")]
    assert list(ours["phases"]) == list(theirs["phases"]) == IO500_ORDER_STANDARD
    assert {p: r["unit"] for p, r in ours["phases"].items()} == {p: r["unit"] for p, r in theirs["phases"].items()}
    assert {p: set(r) for p, r in ours["phases"].items()} == {p: set(r) for p, r in theirs["phases"].items()}
    assert set(ours["score"]) == set(theirs["score"]) and "scorex" not in ours and "scorex" not in theirs
    assert ours["mode"] == theirs["mode"] == "standard" and ours["version"] != theirs["version"]
    # the same [INVALID]s where io500 decides alike: the short write phases, the score
    for p in ("ior-easy-write", "ior-hard-write", "mdtest-easy-write", "mdtest-hard-write"):
        assert not ours["phases"][p]["valid"] and not theirs["phases"][p]["valid"]
    assert not ours["score"]["valid"] and not theirs["score"]["valid"]
    mine, io500s = (result_txt(Path(f).read_text()) for f in (written[1], theirs_dir / "result.txt"))
    assert list(mine) == list(io500s) and set(mine["run"]) == set(io500s["run"])
    assert set(mine["SCORE"]) == set(io500s["SCORE"]) == {"MD", "BW", "SCORE", "hash"}
    for p in ph.PHASES:  # io500 adds its tools' own pairs (throughput-stonewall, nproc, ...)
        assert {"t_start", "t_delta", "t_end"} <= set(mine[p]) and set(mine[p]) <= set(io500s[p]), p
    assert re.fullmatch(r"[0-9A-F]+", io500s["SCORE"]["hash"]) and not re.fullmatch(r"[0-9A-F]+", mine["SCORE"]["hash"])
    assert not re.fullmatch(r"[0-9A-F]+", mine["run"]["config-hash"])


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
    c["io"] |= {"streams": [2], "read_from": "other"}  # the block I/O cell too reads the other stream's file
    c["history"] = str(tmp_path / "history.sqlite")
    run_campaign(tmp_path, c)
    res = tmp_path / "results" / "io5"
    df = pd.read_csv(res / "io500.csv", keep_default_na=False)
    assert list(df.columns) == ["target", "phase", "value", "unit", "seconds", "valid", "invalid_reasons", "doubts"]
    assert list(df["phase"]) == [*IO500_ORDER_STANDARD, "bw", "md", "score"] and set(df["target"]) == {"path"}
    v = df.set_index("phase")
    units = {p: ("GiB/s" if p[0] == "i" else "kIOPS") for p in IO500_ORDER_STANDARD} | {"bw": "GiB/s", "md": "kIOPS"}
    assert v["unit"].drop("score").to_dict() == units and v.loc["score", "unit"] == ""
    values = v["value"].astype(float)
    scored = [p for p in IO500_ORDER_STANDARD if p in IO500_BW | IO500_MD]
    assert (values[scored] > 0).all() and (v["seconds"].astype(float) > 0).all()
    assert round(values["score"], 4) == round(math.sqrt(values["bw"] * values["md"]), 4)
    assert round(values["bw"], 4) == round(math.prod(values[sorted(IO500_BW)]) ** 0.25, 4)
    for p in ph.WRITES:  # short writes under the default stonewall-time (300): io500 prints [INVALID], says why
        assert (
            not v.loc[p, "valid"] and "Runtime is smaller than expected minimum runtime" in v.loc[p, "invalid_reasons"]
        )
    assert not v.loc["score", "valid"] and (v["doubts"] == "").all()
    runs = res / "runs" / "local" / "p" / "path" / "io500" / "rep1"
    rec = {p: pd.read_json(runs / f"{p}.json", typ="series") for p in ph.PHASES}
    assert rec["find"]["amount"] == 2 * (20 + 102) + 2 + 1  # what mdtest-easy and -hard made, and the ior files
    assert rec["find"]["found"] == ph.find_matches(2, 102) == 2 and rec["find"]["valid"]
    assert rec["ior-easy-write"]["amount"] == 2 * 2**20 == rec["ior-easy-read"]["amount"]
    reads = rec["ior-easy-read"]["hosts"]["local"]
    assert "cold" not in reads  # drop-caches false, io500's default
    summary = (res / "summary.md").read_text()
    assert re.findall(r"^## .*", summary, re.M)[0] == "## IO500 phases"  # it leads, under the title
    page = (res / "summary.html").read_text()
    assert page.index("<h2>IO500 phases</h2>") < page.index("<h2>", page.index("</h1>")) + 1
    assert '<td style="text-align:left">mdtest-hard-write</td>' in page and "nan" not in page.split("IO500")[1][:9000]
    # io500's result_summary.txt, read as io500's is read: the same figures as io500.csv, fsbench's version
    found = read_summary((res / "io500" / "path" / "result_summary.txt").read_text())
    assert found["version"].startswith("fsbench-") and found["mode"] == "standard"
    assert list(found["phases"]) == IO500_ORDER_STANDARD
    for p, got in found["phases"].items():
        assert got["value"] == pytest.approx(values[p], abs=1e-6) and got["valid"] == v.loc[p, "valid"]
    assert found["score"]["total"] == pytest.approx(values["score"], abs=1e-6) and not found["score"]["valid"]
    result_txt = (res / "io500" / "path" / "result.txt").read_text()
    assert re.search(r"^hash += fsbench-not-io500$", result_txt, re.M) and "[SCORE]" in result_txt
    io_read = pd.read_json(res / "runs/local/p/path/seq-1MiB-buffered-2s/rep1/read.json", typ="series")
    assert [(w["stream"], w["written_by"]) for w in io_read["read_from"]] == [(0, "stream 1"), (1, "stream 0")]
    assert io_read["read_from"][0]["read"].endswith("-1.dat") and io_read["row"]["bytes"] == 2 * 4 * 2**20
    assert os.listdir(data) == []
    # the results store: each phase a series of its own in the phase's unit, in the run of the block I/O cell
    stored = store.load(c["history"])
    phases = {r["op"]: r for r in stored if r["workload"] == "io500"}
    figures = [p for p in ph.PHASES if p != "timestamp"]  # the timestamp has no figure
    assert sorted(phases) == sorted(figures) and len({r["series"] for r in phases.values()}) == 13
    assert {r["run"] for r in stored} == {next(iter(phases.values()))["run"]}  # one run: io rows and phases
    for p, r in phases.items():
        assert r[("gib_s" if p[0] == "i" else "kiops")] == pytest.approx(values[p], rel=1e-9)
        # judged by what doubts the figure: the short writes the list would not take are figures all the same
        assert r["valid"] and r["key"]["io500"]["mdtest-hard"] == {"n": 102}
        assert r["key"]["io500"]["stonewall-time"] == 300 and r["key"]["hosts"] == "local"
    argv = [sys.executable, "-m", "fsbench", "history", "series", "--store", c["history"]]
    env = os.environ | {"PYTHONPATH": str(REPO / "scripts")}
    listed = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    for p in figures:  # every phase a series, the short writes the list would not take included
        assert any(line.endswith(f" local/p path io500 {p}") for line in listed.splitlines()), (p, listed)


def test_an_io500_campaign_without_an_io_section_measures_only_its_phases(tmp_path):
    """No io: section, no block I/O cell: the campaign runs io500's phases, its summary leads with their table
    and shows their bar chart; io500's files beside it."""
    data = tmp_path / "data"
    data.mkdir()
    c = {k: v for k, v in campaign(data, scratch=str(tmp_path / "s")).items() if k != "io"}
    # the history store holds an earlier run of this campaign (other settings): the chart shows it beside
    c["history"] = str(tmp_path / "history.sqlite")
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    append_phases(c["history"], earlier, history_config(earlier), 0)
    run_campaign(tmp_path / "w", c)
    res = tmp_path / "w" / "results" / "io5"
    log = (res / "logs" / "io500_table.log").read_text()
    assert "phases.png of path: beside the run started 2026-05-28T20:26:40.000000+00:00" in log
    assert os.listdir(res / "runs" / "local" / "p" / "path") == ["io500"]
    assert pd.read_csv(res / "measurements.csv").empty and not (res / "plots").exists()
    page = (res / "summary.html").read_text()
    assert '<img src="io500/path/phases.png"' in page and (res / "io500" / "path" / "phases.png").stat().st_size
    assert sorted(os.listdir(res / "io500" / "path")) == ["phases.png", "result.txt", "result_summary.txt"]


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
        assert before["valid"] == (phase not in ph.WRITES), before  # the writes: under the stonewall (300 s)
        assert list(before["hosts"]) == ([here] if phase != "timestamp" else [])
        if phase == "mdtest-hard-read":  # mdtest -N 1: the next rank's files, read from the inode it wrote
            procs = before["hosts"][here]["processes"]
            opened = [(q["rank"], Path(q["opened"]["path"]).name, q["written_by"]["ranks"]) for q in procs]
            assert opened == [(0, "file.mdtest.1.0", [1]), (1, "file.mdtest.0.0", [0])]
            assert {q["written_by"]["hosts"][0] for q in procs} == {here} and before["amount"] == 2 * 102
        if phase == "ior-easy-read":  # ior -C -Q 1 on one node: each rank its own file
            procs = before["hosts"][here]["processes"]
            opened = [(q["rank"], Path(q["opened"]["path"]).name, q["written_by"]["ranks"]) for q in procs]
            assert opened == [(0, "file.0", [0]), (1, "file.1", [1])]
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
    """table(): 17 rows per target in IO500's order (its 14 phases, bw, md, score); the summary section names
    each target's score and, per phase, the fastest target and the others' ratios to it."""
    records = []
    for target, scale in (("ext4", 1.0), ("ext4-noatime", 2.0)):
        for p in ph.PHASES:
            value = scale * (0.5 if p == "mdtest-hard-write" and target == "ext4-noatime" else 1.0)
            cell = {"host": "local", "array": "d", "target": target}
            records.append(
                {"cell": cell, "phase": p, "value": value, "seconds": 1.0, "valid": True, "invalid_reasons": ""}
            )
    df = table(records)
    assert list(df["target"].unique()) == ["ext4", "ext4-noatime"] and len(df) == 2 * (14 + 3)
    assert list(df[df.target == "ext4"]["phase"]) == [*ph.PHASES, "bw", "md", "score"]
    md = markdown(df)
    assert "### ext4: score 1" in md and "### ext4-noatime: score" in md
    assert "- mdtest-hard-write: fastest ext4 (1); ext4-noatime 1.00×" in md
    assert "- ior-easy-write: fastest ext4-noatime (2); ext4 0.50×" in md


def test_a_kept_cell_of_io500_method_4_is_tabled_with_the_phases_it_measured(tmp_path):
    """methods: recorded keeps a finished cell of method 4, before the timestamp and ior-rnd4K-easy-read: its
    table, score and result files come from its 12 phases; a cell of method 5 without them is refused."""
    from fsbench.io500 import result_files

    old = [p for p in ph.PHASES if p not in ("timestamp", "ior-rnd4K-easy-read")]
    cell = {"host": "local", "array": "d", "target": "ext4", "method": 4, "io500": {"processes": 2}}
    records = [
        {"cell": cell, "phase": p, "value": 1.0, "seconds": 1.0, "valid": True, "invalid_reasons": "", "started_at": 0}
        for p in old
    ]
    df = table(records)
    assert list(df["phase"]) == [*old, "bw", "md", "score"] and df.set_index("phase").loc["score", "value"] == 1.0
    written = result_files.write(records, df, tmp_path)
    assert open(written[0]).readline() == "IO500 version fsbench-io500-method-4 (standard)\n"
    with pytest.raises(ValueError, match="lacks the records of timestamp, ior-rnd4K-easy-read"):
        table([r | {"cell": cell | {"method": 5}} for r in records])
