"""IO500's phases as a campaign: config, the phases' pure logic (interleave, wear-out, score), the phases run for
real on a folder (stonewall and wear-out), and one small campaign on a loop-mounted ext4 of the test's own."""

import copy
import math
import os
import subprocess

import pandas as pd
import pytest

from fsbench.campaign.cells import CellSpec, io500_places
from fsbench.campaign.config import ConfigError, validate
from fsbench.campaign.plan import Plan
from fsbench.io500 import launch
from fsbench.io500 import phases as ph
from fsbench.toolkit.sizes import format_size

from conftest import needs_root, run_campaign

IO500 = {
    "processes": 2,
    "ior-easy": {"transferSize": "64KiB", "blockSize": "1MiB"},
    "ior-hard": {"segmentCount": 10},
    "mdtest-easy": {"n": 20},
    "mdtest-hard": {"n": 15},
}


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
    for phase in ph.WRITES:
        procs = records[phase]["hosts"]["local"]["processes"]
        at_wall = [q["at_stonewall"] for q in procs]
        assert 0 < max(at_wall) < run_limit(cell, phase)  # the stonewall stopped it, not its limit
        assert {q["items"] for q in procs} == {max(at_wall)}  # wear-out: all as far as the furthest
        assert "stonewall-time 0.02 s is under the list's 300 s" in records[phase]["invalid_reasons"]
    made = records[ph.PHASES[-1]]["items"]
    assert records["ior-easy-read"]["amount"] == records["ior-easy-write"]["amount"]
    assert (
        records["ior-hard-read"]["amount"] == records["ior-hard-write"]["amount"] == made["ior-hard-write"] * 2 * 47008
    )
    assert records["find"]["amount"] == 2 * (made["mdtest-easy-write"] + made["mdtest-hard-write"])
    assert records["mdtest-hard-delete"]["amount"] == 2 * made["mdtest-hard-write"]
    assert not list(data.iterdir())  # the last phase leaves nothing


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
    assert rec["find"]["amount"] == 2 * (20 + 15)  # what mdtest-easy and -hard created
    assert rec["ior-easy-write"]["amount"] == 2 * 2**20 == rec["ior-easy-read"]["amount"]
    reads = rec["ior-easy-read"]["hosts"]["local"]
    assert [(q["rank"], q["of_rank"]) for q in reads["processes"]] == [(0, 1), (1, 0)]  # the other stream's file
    assert reads["cached_before"] <= 0.02  # cold, and measured so
    assert "## IO500 phases" in (res / "summary.md").read_text()
    assert os.listdir(data) == []
