import numpy as np
import pandas as pd
import pytest

from fsbench.plots import plot_campaign
from fsbench.records import COLUMNS
from fsbench.stats import summarize

MiB = 2**20
SEED = {"raw": (312, 419), "ext3": (137, 320), "xfs": (269, 410)}  # MB/s write/read, from the 2012 post


def measurements(arrays=("seed",), targets=SEED, block_sizes=(MiB, 4 * MiB), reps=3):
    rng = np.random.default_rng(1)
    rows = []
    for array in arrays:
        for target, rates in targets.items():
            for bs in block_sizes:
                for op, rate in zip(("write", "read"), rates, strict=True):
                    for rep in range(1, reps + 1):
                        mb_s = rate * (1 + rng.normal(0, 0.02))
                        durable = mb_s * (0.85 if op == "write" else 1.0)
                        rows.append({
                            "campaign": "c", "host": "h", "array": array, "target": target, "fs_type": target,
                            "op": op, "pattern": "seq", "block_size": bs, "direct": False, "streams": 1, "rep": rep,
                            "bytes": 2**30, "seconds": 2**30 / mb_s / 1e6, "mb_s": mb_s,
                            "seconds_durable": 2**30 / durable / 1e6, "mb_s_durable": durable, "engine": "python",
                            "cache": "drop", "cached_before": 0.0, "started_at": "2024-01-01T00:00:00Z", "flags": "",
                        })  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)


def names(paths):
    return sorted(p.name for p in paths)


def assert_written(paths):
    for p in paths:
        assert p.exists() and p.stat().st_size > 1000, p
        head = p.read_bytes()[:200]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in p.read_bytes()[:2000]


ALL = ["durable.png", "durable.svg", "efficiency.png", "efficiency.svg", "throughput.png", "throughput.svg"]


@pytest.mark.parametrize("arrays", [("seed",), ("md0", "lustre")])
def test_plot_campaign_one_and_two_arrays(tmp_path, arrays):
    m = measurements(arrays)
    paths = plot_campaign(m, summarize(m), tmp_path / "plots")
    assert names(paths) == ALL
    assert all(p.parent == tmp_path / "plots" for p in paths)
    assert_written(paths)


def test_plot_campaign_without_raw_skips_efficiency(tmp_path):
    m = measurements(targets={k: v for k, v in SEED.items() if k != "raw"})
    paths = plot_campaign(m, summarize(m), tmp_path)
    assert names(paths) == ["durable.png", "durable.svg", "throughput.png", "throughput.svg"]
    assert_written(paths)


def test_plot_campaign_single_repeat_single_block_size(tmp_path):
    m = measurements(block_sizes=(MiB,), reps=1)
    paths = plot_campaign(m, summarize(m), tmp_path)
    assert names(paths) == ALL
    assert_written(paths)


def test_plot_campaign_reads_only_and_empty(tmp_path):
    m = measurements(targets={"ext4": (1, 300)})
    m = m[m["op"] == "read"]
    assert names(plot_campaign(m, summarize(m), tmp_path / "r")) == ["throughput.png", "throughput.svg"]
    assert plot_campaign(m.iloc[:0], summarize(m.iloc[:0]), tmp_path / "e") == []


def test_plot_campaign_from_csv_files(tmp_path):
    # scripts/plot.py reads both frames back from CSV: empty flags become NaN, bools come back as bools.
    m = measurements(arrays=("a", "b"))
    m.to_csv(tmp_path / "m.csv", index=False)
    summarize(m).to_csv(tmp_path / "s.csv", index=False)
    paths = plot_campaign(pd.read_csv(tmp_path / "m.csv"), pd.read_csv(tmp_path / "s.csv"), tmp_path / "plots")
    assert names(paths) == ALL
    assert_written(paths)
