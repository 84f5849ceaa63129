"""fsbench.analysis.compare: Welch's t-test on log rates, comparisons.csv, verdicts, `fsbench compare OLD NEW`."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as reference

from fsbench.__main__ import main
from fsbench.analysis.compare import COLUMNS, comparisons, could_decide, questions, welch_log
from fsbench.analysis.provenance_diff import flatten, provenance_diff
from fsbench.analysis.repeats import repeat_decision
from fsbench.analysis.stats import summarize
from fsbench.report.compare_runs import compare_runs
from fsbench.report.summary import summary_html, summary_markdown

from conftest import REPO, frame, row

MiB = 2**20


NOISE = [0.97, 1.0, 1.03]  # three repeats, ±3%


def campaign(rates, block_sizes=(MiB,), noise=NOISE, iops=True):
    """Measurements of targets {name: (write durable, read)}, each repeat the rate times its noise. Every buffered
    write goes at the page cache's 5000 MB/s (its iops likewise); the durable rate is the storage's."""
    rows = []
    for t, (w, r) in rates.items():
        for bs in block_sizes:
            for i, f in enumerate(noise):
                rows.append(row(t, "write", 5000.0 * f, i + 1, bs, durable=w * f))
                rows.append(row(t, "read", r * f, i + 1, bs))
    m = frame(rows)
    if not iops:
        m["iops"] = np.nan
    return m


def one(frame_, **where):
    mask = np.ones(len(frame_), bool)
    for k, v in where.items():
        mask &= (frame_[k] == v).to_numpy()
    assert mask.sum() == 1, (where, frame_[["a", "b", "op", "metric"]])
    return frame_[mask].iloc[0]


# Welch's t-test on log rates ---------------------------------------------------------------------------------------


def test_welch_log_against_scipy_on_lognormal_samples():
    rng = np.random.default_rng(14)
    a, b = rng.lognormal(np.log(900), 0.3, 5), rng.lognormal(np.log(700), 0.1, 4)
    got = welch_log(a, b)
    want = reference.ttest_ind(np.log(a), np.log(b), equal_var=False)
    assert got["p_value"] == pytest.approx(want.pvalue, rel=1e-10)
    low, high = want.confidence_interval(0.95)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((math.exp(low), math.exp(high)), rel=1e-10)
    assert got["note"] == ""


def test_a_clear_tenfold_difference_is_slower_and_faster_with_the_interval_excluding_one():
    m = campaign({"raw": (1000.0, 1000.0), "slow": (100.0, 100.0)})
    c = comparisons(m)
    slow = one(c, a="slow", b="raw", op="write", metric="mb_s_durable")
    assert slow["ratio"] == pytest.approx(0.1) and slow["verdict"] == "slower"
    assert 0 < slow["ci_low"] <= 0.1 <= slow["ci_high"] < 1 and slow["p_value"] < 1e-4
    assert (slow["n_a"], slow["n_b"], slow["median_a"], slow["median_b"]) == (3, 3, 100.0, 1000.0)
    # The other way round: faster, the interval the reciprocal.
    back = welch_log(
        m[(m.target == "raw") & (m.op == "write")]["mb_s_durable"],
        m[(m.target == "slow") & (m.op == "write")]["mb_s_durable"],
    )
    assert (back["ci_low"], back["ci_high"]) == pytest.approx((1 / slow["ci_high"], 1 / slow["ci_low"]))
    assert back["p_value"] == pytest.approx(slow["p_value"])


def test_figures_of_two_methods_are_not_weighed_and_the_summary_says_so():
    """methods: recorded keeps a finished cell's method beside new cells of today's: no verdict across them."""
    m = campaign({"raw": (1000.0, 1000.0), "slow": (100.0, 100.0)}).assign(method=2)
    m.loc[m["target"] == "slow", "method"] = 3
    slow = one(comparisons(m), a="slow", b="raw", op="write", metric="mb_s_durable")
    assert slow["verdict"] == "not comparable" and bool(slow["valid_a"]) and bool(slow["valid_b"])
    assert "measured with different methods of fsbench (slow: 3, raw: 2)" in slow["note"]
    # One cell whose repeats mix methods is weighed against nothing either.
    m.loc[(m["target"] == "raw") & (m["rep"] == 3), "method"] = 3
    assert one(comparisons(m), a="slow", b="raw", op="read", metric="mb_s")["verdict"] == "not comparable"
    summary = summarize(m)
    assert set(summary["method"]) == {"3", "2;3"}
    assert "Measured with different methods of fsbench: method 2;3 in 2 cells, method 3 in 2 cells" in (
        summary_markdown(summary, "t")
    )
    # The same method on both sides (and measurements from before the column) are weighed as ever.
    assert one(comparisons(m.assign(method=2)), a="slow", b="raw", op="write", metric="mb_s_durable")["verdict"] == (
        "slower"
    )
    assert "Measured with different methods" not in summary_markdown(summarize(m.assign(method=2)), "t")


def test_identical_samples_show_no_clear_difference():
    m = campaign({"raw": (500.0, 800.0), "ext4": (500.0, 800.0)})
    c = comparisons(m)
    assert (c["verdict"] == "no clear difference").all()
    same = one(c, a="ext4", b="raw", op="read", metric="mb_s")
    assert same["ratio"] == 1.0 and same["p_value"] == pytest.approx(1.0) and same["ci_low"] < 1 < same["ci_high"]


def test_constant_samples_and_too_few_repeats():
    assert welch_log([300.0] * 3, [300.0] * 3) == {"ci_low": 1.0, "ci_high": 1.0, "p_value": 1.0, "note": ""}
    apart = welch_log([300.0] * 3, [200.0] * 3)  # no spread at all: the difference is certain
    assert (apart["ci_low"], apart["ci_high"], apart["p_value"]) == (pytest.approx(1.5), pytest.approx(1.5), 0.0)
    few = welch_log([300.0], [100.0, 110.0])
    assert math.isnan(few["p_value"]) and few["note"] == "too few repeats for an interval (n=1 vs 2)"
    m = campaign({"raw": (1000.0, 1000.0), "slow": (100.0, 100.0)}, noise=[1.0])
    c = comparisons(m)
    assert (c["verdict"] == "no clear difference").all() and c["ci_low"].isna().all()
    assert c["note"].str.startswith("too few repeats for an interval (n=1 vs 1)").all()
    assert np.allclose(c[c["metric"] != "iops"]["ratio"], 0.1)


# comparisons.csv ---------------------------------------------------------------------------------------------------


def test_which_comparisons_are_made():
    m = campaign({"raw": (1000.0, 1000.0), "ext4": (135.0, 900.0), "xfs": (1825.0, 950.0)}, (MiB, 4 * MiB))
    # Sequential cells are judged by their rate alone: their IOPS only restates it.
    assert "iops" not in set(comparisons(m)["metric"])
    m["pattern"] = "rand"
    c = comparisons(m)
    assert list(c.columns) == COLUMNS
    assert {"a", "b", "ratio", "ci_low", "ci_high", "p_value", "verdict", "metric", "pattern", "block_size"} <= set(c)
    where = [c["vs"], c["a"], c["b"], c["op"], c["metric"], c["block_size"].fillna(0), c["target"].fillna("")]
    pairs = set(zip(*where, strict=True))
    targets = {("target", a, b) for a, b in [("ext4", "raw"), ("xfs", "raw"), ("ext4", "xfs")]}
    ops = {("write", "mb_s_durable"), ("write", "iops"), ("read", "mb_s"), ("read", "iops")}
    want = {(*t, *o, bs, "") for t in targets for o in ops for bs in (MiB, 4 * MiB)}
    # Block sizes by rate only: iops is the rate over the block size, smaller blocks always do more.
    rates = {("write", "mb_s_durable"), ("read", "mb_s")}
    want |= {("block_size", "1MiB", "4MiB", *o, 0, t) for t in ("raw", "ext4", "xfs") for o in rates}
    assert pairs == want and len(c) == len(want) == 3 * 4 * 2 + 3 * 2
    # Block-size rows name their target; target rows their block size.
    bs = c[c["vs"] == "block_size"]
    assert set(bs["target"]) == {"raw", "ext4", "xfs"} and bs["block_size"].isna().all()
    assert c[c["vs"] == "target"]["target"].isna().all()
    # The case: ext4 (sync, data=journal) against xfs, durable 64 KiB writes, 135 vs 1825 MB/s.
    ext4 = one(c, a="ext4", b="xfs", op="write", metric="mb_s_durable", block_size=MiB)
    assert ext4["verdict"] == "slower" and ext4["ci_high"] < 1 and ext4["ratio"] == pytest.approx(135 / 1825)
    # Writes are judged by the durable rate, not by the page cache's (which says the opposite here).
    assert one(c, a="ext4", b="raw", op="write", metric="iops", block_size=MiB)["verdict"] == "no clear difference"
    # Decided ones first.
    decided = (c["verdict"] != "no clear difference").to_numpy()
    assert decided[: decided.sum()].all()


def test_no_iops_rows_without_iops_and_flags_are_noted():
    m = campaign({"raw": (1000.0, 1000.0), "ext4": (900.0, 1900.0)}, iops=False)
    m.loc[(m.target == "ext4") & (m.op == "read"), "flags"] = "above-raw"
    c = comparisons(m)
    assert set(c["metric"]) == {"mb_s_durable", "mb_s"}
    read = one(c, a="ext4", b="raw", op="read")
    assert read["verdict"] == "faster" and read["note"] == "ext4 flagged above-raw"
    assert comparisons(frame([])).empty and list(comparisons(frame([])).columns) == COLUMNS


def test_summary_opens_with_the_verdicts():
    m = campaign({"raw": (1000.0, 1000.0), "ext4": (135.0, 990.0), "xfs": (1000.0, 1000.0)}, iops=False)
    c = comparisons(m)
    text = summary_markdown(summarize(m), "fsbench campaign 'v'", comparisons=c)
    lines = text.splitlines()
    assert lines[0] == "# fsbench campaign 'v'" and lines[2].startswith("Verdicts, a relative to b")
    assert lines[4] == "| a vs b | where | ratio a/b [95% CI] | p | verdict |"
    table = lines[6 : lines.index("", 6)]
    ext4_raw = one(c, a="ext4", b="raw", op="write")
    assert table[0] == (
        f"| ext4 vs raw | demo: durable write 1MiB | 0.14 [{ext4_raw['ci_low']:.2f}–"
        f"{ext4_raw['ci_high']:.2f}] | <0.001 | slower |"
    )
    assert "| ext4 vs xfs | demo: durable write 1MiB |" in table[1] and len(table) == 2
    undecided = (c["verdict"] == "no clear difference").sum()
    assert lines[7 + len(table)] == (
        f"No clear difference: {undecided} of {len(c)} comparisons; all are in comparisons.csv."
    )
    assert lines.index("## demo") > 7 + len(table)  # then the tables as before
    page = summary_html(summarize(m), "t", comparisons=c)
    assert page.count('<td class="verdict slower">slower</td>') == 2 and page.index("Verdicts") < page.index("demo")
    # Without comparisons (or with none), no verdicts.
    assert "Verdicts" not in summary_markdown(summarize(m), "t")
    none = comparisons(campaign({"raw": (1.0, 1.0)}, noise=[1.0]))
    assert "No comparison shows a clear difference" not in summary_markdown(summarize(m), "t", comparisons=none)


# fsbench compare OLD NEW -------------------------------------------------------------------------------------------


def provenance(mount="rw,relatime", uuid="1111"):
    readback = "Filesystem UUID:          {u}\nBlock size:               4096\nFilesystem created:       {d}"
    return {
        "campaign": "c",
        "host": {"kernel": "6.1.0", "tools": {"mkfs.ext4": "mke2fs 1.47.0"}},
        "arrays": {
            "demo": {
                "devices": [{"device": "/dev/loop0", "model": "loop", "scheduler": "[none] mq-deadline"}],
                "targets": {
                    "ext4": {
                        "fs_type": "ext4",
                        "uuid": uuid,
                        "mkfs_argv": ["mkfs.ext4", "-F", "/dev/loop0"],
                        "mkfs_readback": readback.format(u=uuid, d=f"day {uuid}"),
                        "mount_options_asked": [],
                        "mount_options_read_back": mount,
                    }
                },
            }
        },
    }


@pytest.fixture
def two_runs(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    base = campaign({"raw": (1000.0, 1000.0), "ext4": (800.0, 1000.0)}, iops=False)
    for folder, ext4_write, prov in ((old, 800.0, provenance()), (new, 80.0, provenance("rw,sync,relatime", "22"))):
        folder.mkdir()
        m = base.copy()
        writes = (m.target == "ext4") & (m.op == "write")
        m.loc[writes, "mb_s_durable"] = [ext4_write * f for f in NOISE]
        if folder == old:  # a cell only the old run has
            m = pd.concat([m, m[m.target == "raw"].assign(block_size=4 * MiB)], ignore_index=True)
        m.to_csv(folder / "measurements.csv", index=False)
        (folder / "provenance.json").write_text(json.dumps(prov))
    return old, new


def test_compare_names_the_mount_option_that_differs(two_runs, capsys):
    old, new = two_runs
    assert main(["compare", str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# fsbench compare: new ({new}) against old ({old})")
    # The verdicts: ext4's durable writes fell tenfold, nothing else moved.
    assert "| new vs old | demo ext4: durable write 1MiB | 0.10 [" in out and "| slower |" in out
    assert "No clear difference: 3 of 4 comparisons" in out
    # Provenance: the mount option (as the kernel read it back), nothing else but what differs every run.
    section = out[out.index("## What differs in provenance") :]
    assert "| key | old | new |" in section
    assert "| arrays.demo.targets.ext4.mount_options_read_back | rw,relatime | rw,sync,relatime |" in section
    assert section.count("| arrays.") == 1 and "kernel" not in section and "Block size" not in section
    assert "Also different, as between any two runs: arrays.demo.targets.ext4.uuid" in section
    assert "mkfs_readback.Filesystem UUID" in section and "mkfs_readback.Filesystem created" in section
    # Written beside NEW: the same text, and the comparisons (shared cells only: not raw 4MiB).
    assert (new / "compare.md").read_text() == out[: out.index("\nwritten: ")]
    csv = pd.read_csv(new / "compare.csv")
    assert list(csv.columns) == COLUMNS and len(csv) == 4 and (csv["block_size"] == MiB).all()
    assert set(csv["vs"]) == {"run"} and (csv["a"] == "new").all() and (csv["b"] == "old").all()


def test_compare_takes_measurements_files_and_an_output_path(two_runs, tmp_path, capsys):
    old, new = two_runs
    (old / "provenance.json").unlink()
    out = tmp_path / "elsewhere" / "cmp"
    assert main(["compare", str(old / "measurements.csv"), str(new / "measurements.csv"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"{old / 'measurements.csv'} has no provenance.json" in text
    assert (tmp_path / "elsewhere" / "cmp.md").is_file() and (tmp_path / "elsewhere" / "cmp.csv").is_file()
    assert not (new / "compare.md").exists()
    assert main(["compare", str(tmp_path / "nowhere"), str(new)]) == 2
    assert "no measurements.csv" in capsys.readouterr().err


def test_compare_from_the_command_line(two_runs):
    old, new = two_runs
    env = os.environ | {"PYTHONPATH": str(REPO / "scripts")}
    done = subprocess.run(
        [sys.executable, "-m", "fsbench", "compare", str(old), str(new)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "mount_options_read_back | rw,relatime | rw,sync,relatime" in done.stdout


def test_queue_depths_are_not_pooled():
    m = campaign({"raw": (1000.0, 1000.0), "ext4": (500.0, 1000.0)}, iops=False)
    deep = m.assign(iodepth=32, mb_s_durable=m["mb_s_durable"] * np.where(m["target"] == "raw", 2, 1))
    c = comparisons(pd.concat([m.assign(iodepth=1), deep], ignore_index=True))
    write = c[(c["op"] == "write") & (c["vs"] == "target")]
    assert sorted(zip(write["iodepth"], write["ratio"], strict=True)) == [(1, 0.5), (32, 0.25)]
    assert "demo: durable write 1MiB qd32" in summary_markdown(summarize(m), "t", comparisons=c)
    assert comparisons(m)["iodepth"].isna().all()  # a measurements.csv without the column


def test_compare_runs_with_several_hosts_matches_hosts():
    m = campaign({"raw": (1000.0, 1000.0)}, iops=False)
    two = pd.concat([m.assign(host="n1"), m.assign(host="n2", mb_s_durable=m["mb_s_durable"] / 10)])
    c = compare_runs(two, two.assign(mb_s_durable=two["mb_s_durable"] * 10), "old", "new")
    assert len(c) == 4 and set(c["host"]) == {"n1", "n2"} and (c["verdict"] != "faster").sum() == 2


def test_flatten_and_diff_provenance():
    flat = flatten(provenance())
    assert flat["arrays.demo.devices[0].model"] == "loop"
    assert flat["arrays.demo.targets.ext4.mkfs_argv"] == "mkfs.ext4 -F /dev/loop0"
    assert flat["arrays.demo.targets.ext4.mkfs_readback.Block size"] == "4096"
    xfs = "meta-data=/dev/loop1 isize=512    agcount=4, agsize=16384 blks\n         =  sectsz=512   attr=2\n"
    xfs += "data     =                       bsize=4096   blocks=65536, imaxpct=25"
    fields = flatten({"r": xfs})
    assert fields["r.meta-data.isize"] == "512" and fields["r.meta-data.sectsz"] == "512"
    assert fields["r.data.bsize"] == "4096" and fields["r.meta-data"] == "/dev/loop1"
    changes, per_run = provenance_diff(provenance(), provenance())
    assert changes == [] and per_run == []
    new = provenance()
    new["host"]["kernel"] = "6.12.0"
    del new["host"]["tools"]
    changes, _ = provenance_diff(provenance(), new)
    assert changes == [("host.kernel", "6.1.0", "6.12.0"), ("host.tools.mkfs.ext4", "mke2fs 1.47.0", "(none)")]


# Repeats that stop when the question is answered (io.repeats decide) -----------------------------------------------


def test_could_decide_projects_the_test_to_more_repeats():
    a, b = [100.0, 104.0, 97.0], [108.0, 103.0, 111.0]  # about 7 % apart, a few % spread: open at n=3
    assert welch_log(a, b)["p_value"] > 0.05
    assert could_decide(a, b, 10, 10) and not could_decide(a, b, 3, 3)
    # Where the spread swamps the difference, no number of repeats within reach decides it.
    assert not could_decide([100.0, 150.0, 70.0], [101.0, 140.0, 75.0], 20, 20)
    # A partner that stopped keeps its repeats: less to gain.
    assert could_decide(a, b, 30, 30) and not could_decide(a, b, 30, 3)
    assert could_decide([5.0, 5.0], [6.0, 6.0], 2, 2) and not could_decide([5.0, 5.0], [5.0, 5.0], 99, 99)
    assert could_decide([5.0], [6.0, 6.1], 3, 3) and not could_decide([0.0, 1.0], [1.0, 2.0], 9, 9)


def cell_rows(target, writes, reads, block_size=MiB):
    return [row(target, "write", w, rep=i + 1, block_size=block_size) for i, w in enumerate(writes)] + [
        row(target, "read", r, rep=i + 1, block_size=block_size) for i, r in enumerate(reads)
    ]


def test_a_cell_repeats_while_a_comparison_it_is_part_of_is_open():
    plan = {"min": 3, "max": 10, "target_ci": None, "decide": True}
    ext4 = cell_rows("ext4", [100.0, 104.0, 97.0], [500.0, 505.0, 498.0])
    xfs = cell_rows("xfs", [108.0, 103.0, 111.0], [100.0, 101.0, 99.0])
    asked = questions(frame(ext4), frame(xfs), plan["max"])
    assert [(q["a"], q["b"], q["op"], q["metric"], q["verdict"], q["open"]) for q in asked] == [
        ("ext4", "xfs", "write", "mb_s_durable", "no clear difference", True),
        ("ext4", "xfs", "read", "mb_s", "faster", False),
    ]
    d = repeat_decision(ext4, plan, asked)
    assert d["more"] and d["stopped"] == "more" and "ext4 vs xfs durable write: no clear difference" in d["reason"]
    # Once xfs has stopped (fewer repeats than ext4), ext4 alone cannot decide it: it stops, and says which.
    ext4_more = cell_rows("ext4", [100.0, 104.0, 97.0, 99.0], [500.0, 505.0, 498.0, 501.0])
    d = repeat_decision(ext4_more, plan, questions(frame(ext4_more), frame(xfs), plan["max"]))
    assert not d["more"] and d["stopped"] == "undecidable" and "ext4 vs xfs durable write" in d["reason"]
    # Both answered: decided, with the verdicts; at max with one open: max, naming it.
    xfs_slow = cell_rows("xfs", [50.0, 51.0, 49.0], [100.0, 101.0, 99.0])
    d = repeat_decision(ext4, plan, questions(frame(ext4), frame(xfs_slow), plan["max"]))
    assert d["stopped"] == "decided" and "ext4 vs xfs durable write: faster" in d["reason"] and not d["more"]
    d = repeat_decision(ext4, plan | {"max": 3}, asked)
    assert d["stopped"] == "max" and "still ext4 vs xfs durable write" in d["reason"]
    # With a target_ci too, both must be met.
    d = repeat_decision(ext4, plan | {"target_ci": 0.001}, questions(frame(ext4), frame(xfs_slow), 10))
    assert d["more"] and "widest 95% CI" in d["reason"]


def test_block_size_neighbours_are_compared_by_rate_and_named_by_size():
    small = cell_rows("ext4", [100.0, 101.0, 99.0], [200.0, 201.0, 199.0])
    large = cell_rows("ext4", [300.0, 301.0, 299.0], [200.0, 202.0, 198.0], block_size=4 * MiB)
    asked = questions(frame(small), frame(large), 6)
    assert [(q["a"], q["b"], q["metric"], q["verdict"]) for q in asked] == [
        ("1MiB", "4MiB", "mb_s_durable", "slower"),
        ("1MiB", "4MiB", "mb_s", "no clear difference"),
    ]


def test_compare_runs_judges_iops_of_random_cells_only_as_a_campaign_does():
    m = campaign({"raw": (1000.0, 1000.0)})
    rand = m.assign(pattern="rand")
    seq_metrics = set(compare_runs(m, m, "old", "new")["metric"])
    rand_metrics = set(compare_runs(rand, rand, "old", "new")["metric"])
    assert seq_metrics == {"mb_s_durable", "mb_s"} and rand_metrics == seq_metrics | {"iops"}
