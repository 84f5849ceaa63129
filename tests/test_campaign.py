"""End to end: the seed's experiment (raw + ext3 + xfs, bs 1MiB and 4MiB, 2 repeats) on a real loop device."""

import json
import math
import subprocess

import pandas as pd
import pytest

from fsbench.records import COLUMNS

from conftest import REPO, SNAKEMAKE, held, needs_root, private_scratch, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]

SIZE = 128 * 2**20


def seed_campaign(scratch, name="seed"):
    return {
        "campaign": name,
        "scratch": str(scratch),
        "arrays": {"demo": {"kind": "loop", "size": "512MiB"}},
        "raw": True,
        "filesystems": {
            "ext3": {"type": "ext3", "mkfs": ["-j", "-T", "largefile4", "-b", "4096"]},
            "xfs": {"type": "xfs"},
        },
        "io": {"size": SIZE, "block_sizes": ["1MiB", "4MiB"], "repeats": 2},
        "baselines": {"3ware-2012": str(REPO / "tests/data/seed_3ware_2012.txt")},
    }


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory):
    """One real campaign, shared by the checks below."""
    work = tmp_path_factory.mktemp("seed")
    with private_scratch() as scratch:
        yield work, scratch, run_campaign(work, seed_campaign(scratch))


def test_every_row_satisfies_the_contract(seed_run):
    work, scratch, _ = seed_run
    df = pd.read_csv(work / "results/seed/measurements.csv", keep_default_na=False, na_values=[""])
    assert len(df) == 24
    assert list(df.columns[: len(COLUMNS)]) == COLUMNS
    assert set(df.target) == {"raw", "ext3", "xfs"}
    assert dict(df.groupby("target").fs_type.first()) == {"raw": "raw", "ext3": "ext3", "xfs": "xfs"}
    assert set(df.block_size) == {2**20, 4 * 2**20}
    assert set(df.rep) == {1, 2}
    assert df.groupby(["target", "op", "block_size"]).size().eq(2).all()
    assert (df.bytes == SIZE).all()
    assert (df.campaign == "seed").all() and (df.array == "demo").all()
    assert (df.pattern == "seq").all() and (~df.direct).all() and (df.streams == 1).all()
    assert (df.engine == "python").all() and (df.cache == "drop").all()
    for row in df.itertuples():
        assert math.isclose(row.mb_s, row.bytes / row.seconds / 1e6, rel_tol=1e-9)
        assert math.isclose(row.mb_s_durable, row.bytes / row.seconds_durable / 1e6, rel_tol=1e-9)
        assert pd.Timestamp(row.started_at).tzinfo is not None
    writes, reads = df[df.op == "write"], df[df.op == "read"]
    assert (writes.seconds_durable >= writes.seconds).all()
    assert (reads.seconds_durable == reads.seconds).all()
    assert reads.cached_before.between(0, 0.02).all()
    assert writes.cached_before.isna().all()
    # each read followed its own write, and filesystems never overlapped: raw, then ext3, then xfs
    df["t"] = pd.to_datetime(df.started_at)
    spans = df.groupby("target").t.agg(["min", "max"]).loc[["raw", "ext3", "xfs"]]
    assert spans["max"].iloc[0] < spans["min"].iloc[1] and spans["max"].iloc[1] < spans["min"].iloc[2]
    pairs = df.pivot_table(index=["target", "block_size", "rep"], columns="op", values="t", aggfunc="first")
    assert (pairs["write"] < pairs["read"]).all()


def test_summary_plots_and_provenance(seed_run):
    work, _, _ = seed_run
    out = work / "results/seed"
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 12
    for col in ["n", "median", "mean", "stdev", "ci95_low", "ci95_high", "cv", "efficiency_vs_raw"]:
        assert col in summary.columns
    assert (summary.n == 2).all()
    assert (summary.ci95_low <= summary["mean"]).all() and (summary["mean"] <= summary.ci95_high).all()
    raw = summary[summary.target == "raw"]
    assert (raw.efficiency_vs_raw == 1).all()
    md = (out / "summary.md").read_text()
    assert "ext3" in md and "xfs" in md and "MB/s" in md
    for name in ["throughput", "durable", "efficiency"]:
        for ext in ["png", "svg"]:
            assert (out / "plots" / f"{name}.{ext}").stat().st_size > 1000
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["host"]["kernel"] and prov["host"]["tools"]["mkfs.xfs"]
    demo = prov["arrays"]["demo"]
    assert demo["devices"][0]["loop_direct_io"] == "1"
    ext3 = demo["targets"]["ext3"]
    assert ext3["mkfs_argv"][-6:-1] == ["-j", "-T", "largefile4", "-b", "4096"]
    assert "lazy_itable_init=0,lazy_journal_init=0" in ext3["mkfs_argv"]
    assert "has_journal" in ext3["mkfs_readback"] and "Block size:               4096" in ext3["mkfs_readback"]
    assert "xfs" in demo["targets"]["xfs"]["mount_options_read_back"] or demo["targets"]["xfs"]["fs_type"] == "xfs"


def test_second_run_has_nothing_to_do_and_nothing_is_held(seed_run):
    work, scratch, _ = seed_run
    assert not held(scratch)
    proc = run_campaign(work, seed_campaign(scratch), "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_bad_config_stops_before_anything_is_touched(scratch, tmp_path):
    bad = seed_campaign(scratch, "bad")
    bad["io"]["block_sizes"] = ["1MiB", "4Q"]
    proc = run_campaign(tmp_path, bad, check=False)
    assert proc.returncode != 0
    said = proc.stdout + proc.stderr
    assert "config key 'io.block_sizes[1]': value '4Q' is not allowed; allowed:" in said
    assert "Traceback" not in said
    assert not (tmp_path / "results").exists()
    assert not held(scratch) and not any(scratch.iterdir())


def test_baselines_and_report(seed_run):
    work, scratch, _ = seed_run
    base = pd.read_csv(work / "results/seed/baselines.csv")
    assert list(base.columns) == COLUMNS and len(base) == 7
    assert (base.campaign == "3ware-2012").all() and (base.engine == "dd-log").all()
    raw_write = base[(base.target == "raw") & (base.op == "write")].iloc[0]
    assert raw_write.bytes == 21474836480 and raw_write.seconds == 68.929 and raw_write.seconds_durable == 78.373
    report = work / "results/seed/report.html"
    cfg = work / "campaign.yaml"
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(work), "--report", str(report)]
    subprocess.run([*argv, "--configfile", str(cfg)], check=True, capture_output=True, timeout=300)
    html = report.read_text()
    for name in ("throughput.png", "durable.png", "efficiency.png", "summary.csv", "provenance.json"):
        assert name in html
