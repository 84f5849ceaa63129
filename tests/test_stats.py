import math

import numpy as np
import pandas as pd
import pytest

from fsbench.records import COLUMNS
from fsbench.stats import SUMMARY_COLUMNS, flag_above_raw, summarize, summary_markdown

MiB = 2**20
# t(0.975, df=2), from tables; scipy-independent.
T_975_2 = 4.302652729911275


def row(target="raw", op="write", mb_s=100.0, rep=1, array="a", block_size=MiB, durable=None, flags="", **over):
    r = {
        "campaign": "c", "host": "h", "array": array, "target": target,
        "fs_type": "raw" if target == "raw" else target, "op": op, "pattern": "seq", "block_size": block_size,
        "direct": False, "streams": 1, "rep": rep, "bytes": 10**9, "seconds": 1e3 / mb_s, "mb_s": mb_s,
        "seconds_durable": 1e3 / (durable or mb_s), "mb_s_durable": durable or mb_s, "engine": "python",
        "cache": "drop", "cached_before": 0.0, "started_at": "2024-01-01T00:00:00Z", "flags": flags,
    }  # fmt: skip
    r.update(over)
    return r


def frame(rows):
    return pd.DataFrame(rows, columns=COLUMNS)


def one(summary, **where):
    mask = np.ones(len(summary), bool)
    for k, v in where.items():
        mask &= summary[k] == v
    assert mask.sum() == 1, where
    return summary[mask].iloc[0]


def test_summarize_known_numbers():
    m = frame([row(mb_s=v, rep=i + 1, durable=v / 2) for i, v in enumerate([1.0, 2.0, 3.0])])
    s = summarize(m)
    assert list(s.columns) == SUMMARY_COLUMNS
    r = s.iloc[0]
    half = T_975_2 * 1.0 / math.sqrt(3)
    assert half == pytest.approx(2.4842, abs=1e-4)
    assert (r["n"], r["median"], r["mean"], r["stdev"]) == (3, 2.0, 2.0, 1.0)
    assert r["ci95_low"] == pytest.approx(2 - half)
    assert r["ci95_high"] == pytest.approx(2 + half)
    assert r["cv"] == pytest.approx(0.5)
    assert r["median_durable"] == 1.0 and r["mean_durable"] == 1.0
    assert r["efficiency_vs_raw"] == 1.0  # raw against itself


def test_summarize_single_repeat_has_no_spread():
    r = summarize(frame([row(mb_s=312.0)])).iloc[0]
    assert r["n"] == 1 and r["median"] == 312.0 and r["mean"] == 312.0
    assert all(math.isnan(r[c]) for c in ("stdev", "ci95_low", "ci95_high", "cv"))


def test_summarize_ignores_missing_rates():
    r = summarize(frame([row(mb_s=10.0, rep=1), row(mb_s=np.nan, rep=2), row(mb_s=20.0, rep=3)])).iloc[0]
    assert r["n"] == 2 and r["mean"] == 15.0


def test_efficiency_vs_raw_within_cell():
    m = frame(
        [row("raw", "write", v, i) for i, v in enumerate([300.0, 310.0, 320.0])]
        + [row("ext3", "write", v, i) for i, v in enumerate([150.0, 155.0, 160.0])]
        + [row("raw", "read", 400.0), row("ext3", "read", 100.0)]
        + [row("ext3", "read", 50.0, block_size=4 * MiB)]  # no raw at 4MiB
        + [row("xfs", "write", 93.0, array="noraw")]
    )
    s = summarize(m)
    assert one(s, target="ext3", op="write", block_size=MiB)["efficiency_vs_raw"] == pytest.approx(155 / 310)
    assert one(s, target="ext3", op="read", block_size=MiB)["efficiency_vs_raw"] == pytest.approx(0.25)
    assert math.isnan(one(s, target="ext3", op="read", block_size=4 * MiB)["efficiency_vs_raw"])
    assert math.isnan(one(s, array="noraw")["efficiency_vs_raw"])


def test_summarize_order_raw_first_write_before_read():
    m = frame(
        [row("xfs", "read", 1.0), row("xfs", "write", 1.0, block_size=4 * MiB), row("xfs", "write", 1.0)]
        + [row("raw", "read", 1.0), row("ext3", "write", 1.0), row("raw", "write", 1.0, array="b")]
    )
    s = summarize(m)
    got = list(zip(s["array"], s["target"], s["op"], s["block_size"], strict=True))
    assert got == [
        ("a", "raw", "read", MiB),
        ("a", "xfs", "write", MiB),
        ("a", "xfs", "write", 4 * MiB),
        ("a", "xfs", "read", MiB),
        ("a", "ext3", "write", MiB),
        ("b", "raw", "write", MiB),
    ]


def test_empty_frames():
    s = summarize(frame([]))
    assert s.empty and list(s.columns) == SUMMARY_COLUMNS
    assert flag_above_raw(frame([])).empty
    text = summary_markdown(s, "Nothing")
    assert text.startswith("# Nothing") and "No measurements" in text


def test_flag_above_raw():
    m = frame(
        [row("raw", "read", 400.0, 1), row("raw", "read", 410.0, 2)]
        + [row("ext4", "read", 405.0), row("ext4", "read", 900.0, 2), row("ext4", "read", 950.0, 3, flags="cached")]
        + [row("ext4", "read", 990.0, 4, flags="above-raw")]  # already flagged: not twice
        + [row("ext4", "write", 999.0)]  # no raw write: unchanged
        + [row("ext4", "read", 999.0, block_size=4 * MiB, flags=np.nan)]  # no raw at 4MiB: unchanged
    )
    out = flag_above_raw(m)
    assert list(out["flags"].iloc[:6]) == ["", "", "", "above-raw", "cached;above-raw", "above-raw"]
    assert out["flags"].iloc[6] == ""
    assert pd.isna(out["flags"].iloc[7])
    assert list(m["flags"].iloc[:6]) == ["", "", "", "", "cached", "above-raw"]  # input untouched
    assert list(out.columns) == COLUMNS and len(out) == len(m)


def test_summary_markdown_cells():
    m = frame(
        [row("raw", "write", v, i, durable=v - 40) for i, v in enumerate([305.0, 312.0, 318.0])]
        + [row("raw", "read", 419.0)]
        + [row("ext3", "write", 137.0, durable=110.0), row("ext3", "read", 320.0)]
        + [row("ext3", "read", 340.0, block_size=4 * MiB)]
    )
    text = summary_markdown(summarize(m), "Seed 2012")
    assert text.startswith("# Seed 2012\n")
    assert "10^6" in text and "durable" in text.lower()
    assert "## a" in text
    lines = text.splitlines()
    header = next(x for x in lines if x.startswith("| target | write 1MiB"))
    assert header == "| target | write 1MiB | read 1MiB | read 4MiB |"  # only tests that were run
    raw = next(x for x in lines if x.startswith("| Raw |"))
    m3 = np.mean([305.0, 312.0, 318.0])
    half = T_975_2 * np.std([305.0, 312.0, 318.0], ddof=1) / math.sqrt(3)
    assert raw.startswith(f"| Raw | 312 MB/s [{m3 - half:.0f}–{m3 + half:.0f}] n=3 | 419 MB/s n=1 | – |")
    ext3 = next(x for x in lines if x.startswith("| ext3 |"))
    assert ext3 == "| ext3 | 137 MB/s n=1 | 320 MB/s n=1 | 340 MB/s n=1 |"
    # Second table: durable write medians, then the share of raw.
    second = [x for x in lines if x.startswith("| ext3 |")][1]
    assert second == "| ext3 | 110 MB/s | 44% | 76% | – |"
    # Nothing varies besides block size, so the labels stay short and the constant test is said once.
    assert "seq, buffered, 1 stream" in text and "buffered |" not in text


def test_summary_markdown_labels_what_varies():
    m = frame([row(mb_s=100.0), row(mb_s=50.0, direct=True), row(mb_s=70.0, array="b")])
    text = summary_markdown(summarize(m), "t")
    assert "write 1MiB buffered" in text and "write 1MiB direct" in text
    assert "## a" in text and "## b" in text
