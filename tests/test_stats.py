import math

import numpy as np
import pandas as pd
import pytest

from fsbench.analysis.repeats import repeat_decision
from fsbench.analysis.stats import (
    SUMMARY_COLUMNS,
    cell_flags,
    flag_above_raw,
    log_interval,
    relative_ci,
    summarize,
    summarize_baselines,
)
from fsbench.measurement.rows import COLUMNS
from fsbench.report.document import number
from fsbench.report.summary import summary_html, summary_markdown

from conftest import frame, seed_baseline
from conftest import row as measurement

MiB = 2**20
# t(0.975, df=2), from tables; scipy-independent.
T_975_2 = 4.302652729911275
NO_CI = "n=1, too few repeats for an interval"


def log_ci(values, t):
    """The 95% interval of the geometric mean, by hand: exp(mean(log x) ± t sd(log x) / sqrt(n))."""
    logs = [math.log(v) for v in values]
    mean = sum(logs) / len(logs)
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
    half = t * sd / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def row(target="raw", op="write", mb_s=100.0, rep=1, array="a", **over):
    return measurement(target, op, mb_s, rep, array=array, **over)


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
    assert (r["n"], r["median"], r["mean"], r["stdev"]) == (3, 2.0, 2.0, 1.0)
    # The interval of the geometric mean (6^(1/3)), on the log scale: positive where Student t on the rates
    # gives 2 ± 2.48, below zero.
    assert r["gmean"] == pytest.approx(6 ** (1 / 3))
    assert (r["ci95_low"], r["ci95_high"]) == pytest.approx((0.457122, 7.22330), rel=1e-5)
    assert (r["ci95_low"], r["ci95_high"]) == pytest.approx(log_ci([1.0, 2.0, 3.0], T_975_2))
    assert r["ci95_note"] == ""
    assert r["cv"] == pytest.approx(0.5)
    assert r["median_durable"] == 1.0 and r["mean_durable"] == 1.0
    assert r["efficiency_vs_raw"] == 1.0  # raw against itself


def test_summarize_single_repeat_has_no_spread():
    r = summarize(frame([row(mb_s=312.0)])).iloc[0]
    assert r["n"] == 1 and r["median"] == 312.0 and r["mean"] == 312.0
    assert all(math.isnan(r[c]) for c in ("stdev", "ci95_low", "ci95_high", "cv"))
    assert r["ci95_note"] == "too few repeats for an interval" and r["gmean"] == pytest.approx(312.0)


# The interval on known samples -----------------------------------------------------------------------------------

# t(0.975, df) from tables, for df = 1 and 4.
T_975_1 = 12.706204736174705
T_975_4 = 2.7764451051977987


def test_one_repeat_has_no_interval_two_have_a_wide_one():
    assert log_interval([312.0])[2] == "too few repeats for an interval"
    assert all(math.isnan(v) for v in log_interval([312.0])[:2]) and log_interval([])[2] == NO_CI[5:]
    # n = 2: one degree of freedom. The interval is exact for lognormal repeats, and as wide as that truly is:
    # exp(±12.7 · log(200/100) / 2) = ×/÷ 82 around the geometric mean 141.
    low, high, note = log_interval([100.0, 200.0])
    assert note == "" and (low, high) == pytest.approx(log_ci([100.0, 200.0], T_975_1))
    assert (low, high) == pytest.approx((1.72998, 11560.84), rel=1e-5)
    assert 0 < low < 100 and high > 200
    # Two close repeats on a quiet machine pin the rate down well enough (1% apart: ±6.5%).
    low, high, _ = log_interval([300.0, 303.0])
    assert (low, high) == pytest.approx(log_ci([300.0, 303.0], T_975_1)) and high / low < 1.14


def test_zero_variance_gives_a_zero_width_interval_not_nan():
    assert log_interval([250.0, 250.0, 250.0]) == (250.0, 250.0, "")
    r = summarize(frame([row(mb_s=250.0, rep=i) for i in (1, 2, 3)])).iloc[0]
    assert (r["ci95_low"], r["ci95_high"], r["stdev"], r["cv"]) == (250.0, 250.0, 0.0, 0.0)
    assert "250 MB/s [250–250] n=2" in summary_markdown(summarize(frame([row(mb_s=250.0, rep=i) for i in (1, 2)])), "t")
    # A rate of zero has no logarithm: no interval, and the note says why.
    assert log_interval([0.0, 10.0])[2] == "a rate of zero: no interval on the log scale"


def test_an_outlier_widens_the_interval_but_never_below_zero():
    sample = [100.0, 101.0, 99.0, 100.0, 1000.0]
    low, high, _ = log_interval(sample)
    assert (low, high) == pytest.approx(log_ci(sample, T_975_4))
    assert (low, high) == pytest.approx((44.1248, 569.245), rel=1e-5)
    assert 0 < low < 100 < high  # the median (100) inside; Student t on the rates: 280 ± 500, from -220
    r = summarize(frame([row(mb_s=v, rep=i + 1) for i, v in enumerate(sample)])).iloc[0]
    assert r["median"] == 100.0 and r["ci95_low"] == pytest.approx(low) and r["mean"] - 2.7764 * r["stdev"] / 5**0.5 < 0


def test_lognormal_sample_against_scipy():
    from scipy import stats as reference

    x = np.random.default_rng(14).lognormal(mean=math.log(800), sigma=0.4, size=7)
    logs = np.log(x)
    want = np.exp(reference.t.interval(0.95, len(x) - 1, loc=logs.mean(), scale=reference.sem(logs)))
    assert log_interval(x)[:2] == pytest.approx(tuple(want), rel=1e-12)
    r = summarize(frame([row(mb_s=v, rep=i + 1) for i, v in enumerate(x)])).iloc[0]
    assert r["gmean"] == pytest.approx(reference.gmean(x), rel=1e-12)


def test_the_interval_covers_the_median_of_lognormal_rates_95_percent_of_the_time():
    # 4000 campaigns of 3 repeats from a rate whose median is 500 MB/s and that varies by ±40% (sigma 0.4).
    samples = np.random.default_rng(7).lognormal(math.log(500), 0.4, size=(4000, 3))
    covered = [low <= 500 <= high for low, high, _ in map(log_interval, samples)]
    assert 0.94 <= np.mean(covered) <= 0.96


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
    low, high = log_ci([305.0, 312.0, 318.0], T_975_2)
    assert raw.startswith(f"| Raw | 312 MB/s [{low:.0f}–{high:.0f}] n=3 | 419 MB/s {NO_CI} | – |")
    ext3 = next(x for x in lines if x.startswith("| ext3 |"))
    assert ext3 == f"| ext3 | 137 MB/s {NO_CI} | 320 MB/s {NO_CI} | 340 MB/s {NO_CI} |"
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


# The 2012 seed's dd log as baselines.csv holds it: 20 GiB per run, dd's seconds and the shell's `real` line.


def small_campaign():
    return frame(
        [
            row(t, op, v * f, i + 1, array="loop", block_size=bs)
            for i, f in enumerate([0.98, 1.0, 1.02])
            for t, w, r in [("raw", 1900.0, 2000.0), ("ext3", 420.0, 1500.0), ("xfs", 1500.0, 1900.0)]
            for bs in (MiB, 4 * MiB)
            for op, v in (("write", w), ("read", r))
        ]
    )


def test_summarize_baselines_keeps_each_baseline_apart():
    later = seed_baseline("last-run")
    later = later[later["target"] != "raw"].assign(target=lambda f: f["target"].map({"ext3": "xfs", "xfs": "ext3"}))
    s = summarize_baselines(pd.concat([seed_baseline(), later], ignore_index=True))
    assert list(s.columns) == SUMMARY_COLUMNS
    assert list(dict.fromkeys(s["campaign"])) == ["3ware-2012", "last-run"]
    # Each in its own order (not the first baseline's), each efficiency against its own raw only.
    assert list(dict.fromkeys(s[s["campaign"] == "last-run"]["target"])) == ["xfs", "ext3"]
    assert s[s["campaign"] == "last-run"]["efficiency_vs_raw"].isna().all()
    assert one(s, campaign="3ware-2012", target="ext3", op="write")["efficiency_vs_raw"] == pytest.approx(
        68.929 / 156.81
    )
    assert summarize_baselines(frame([])).empty and summarize_baselines(None).empty


def test_summary_markdown_baselines_section():
    campaign = small_campaign()
    summary = summarize(campaign)
    text = summary_markdown(summary, "fsbench campaign 'today'", summarize_baselines(seed_baseline()))
    lines = text.splitlines()
    # The campaign's tables first, exactly as without baselines; then the section, one heading per baseline.
    alone = summary_markdown(summary, "fsbench campaign 'today'")
    assert text.startswith(alone.rstrip("\n"))
    assert lines.index("## loop") < lines.index("## Baselines") < lines.index("### 3ware-2012")
    after = lines[lines.index("### 3ware-2012") :]
    assert "All tests: seq, buffered, 1 stream." in after
    assert "| target | write 1MiB | read 1MiB | read 4MiB |" in after  # only what the seed ran
    assert f"| Raw | 312 MB/s {NO_CI} | 419 MB/s {NO_CI} | – |" in after
    assert f"| ext3 | 137 MB/s {NO_CI} | 320 MB/s {NO_CI} | 340 MB/s {NO_CI} |" in after
    assert f"| xfs | 269 MB/s {NO_CI} | 410 MB/s {NO_CI} | – |" in after
    # Durable = the `real` line; share of raw within the baseline.
    assert "| target | write 1MiB durable | write 1MiB vs raw | read 1MiB vs raw | read 4MiB vs raw |" in after
    assert "| Raw | 274 MB/s | 100% | 100% | – |" in after
    assert "| ext3 | 111 MB/s | 44% | 76% | – |" in after
    # The campaign's own tables hold none of the seed's figures.
    before = lines[: lines.index("## Baselines")]
    assert not any("312 MB/s" in x or "n=1" in x for x in before)
    assert any(x.startswith("| Raw | 1900 MB/s") for x in before)


def test_summary_markdown_baselines_optional_and_alone():
    summary = summarize(small_campaign())
    for none in (None, summarize_baselines(frame([]))):
        assert "Baselines" not in summary_markdown(summary, "t", none)
    # No measurements of its own yet: the baselines still show.
    text = summary_markdown(summarize(frame([])), "t", summarize_baselines(seed_baseline()))
    assert "No measurements." in text and "## Baselines" in text
    assert f"| Raw | 312 MB/s {NO_CI} | 419 MB/s {NO_CI} | – |" in text


def test_summary_markdown_baselines_several_and_odd_rows():
    older = seed_baseline()
    # An earlier measurements.csv with two arrays, and a dd log whose headings named neither target nor op.
    last = small_campaign().assign(campaign="last-run")
    last = pd.concat([last, last[last["array"] == "loop"].assign(array="md0")], ignore_index=True)
    pasted = seed_baseline("pasted").iloc[:2].assign(target=["", np.nan], fs_type=["", np.nan], op=["write", ""])
    text = summary_markdown(
        summarize(small_campaign()), "t", summarize_baselines(pd.concat([older, last, pasted], ignore_index=True))
    )
    lines = text.splitlines()
    headings = [x for x in lines if x.startswith("### ")]
    assert headings == ["### 3ware-2012", "### last-run / loop", "### last-run / md0", "### pasted"]
    after = lines[lines.index("### pasted") :]
    assert "| target | write 1MiB | op? 1MiB |" in after
    assert any(x.startswith(f"| unnamed | 312 MB/s {NO_CI} |") for x in after)


def test_relative_ci_is_half_the_interval_width_over_the_median():
    low, high = log_ci([100, 102, 98], T_975_2)
    assert math.isclose(relative_ci([100, 102, 98]), (high - low) / 2 / 100, rel_tol=1e-9)
    # With little spread, about what Student t on the rates gave (4.9683%).
    assert math.isclose(relative_ci([100, 102, 98]), 0.049704, rel_tol=1e-4)
    assert math.isnan(relative_ci([100])) and math.isnan(relative_ci([0, 0, 0]))
    assert relative_ci([300, 300, 300]) == 0.0


def rows(writes, reads, durable=None):
    durable = durable or writes
    pairs = enumerate(zip(writes, durable, strict=True))
    out = [{"op": "write", "rep": i + 1, "mb_s": w, "mb_s_durable": d} for i, (w, d) in pairs]
    return out + [{"op": "read", "rep": i + 1, "mb_s": r, "mb_s_durable": r} for i, r in enumerate(reads)]


PLAN = {"min": 3, "max": 5, "target_ci": 0.05}


def test_a_quiet_cell_stops_at_target_ci_a_noisy_one_asks_for_more_until_max():
    quiet = repeat_decision(rows([300, 301, 299], [500, 502, 499]), PLAN)
    assert not quiet["more"] and quiet["stopped"] == "target_ci" and quiet["repeats"] == 3
    assert "after 3 repeats" in quiet["reason"] and set(quiet["ci"]) == {
        "write.mb_s",
        "write.mb_s_durable",
        "read.mb_s",
    }
    noisy = repeat_decision(rows([300, 301, 299], [500, 502, 499], durable=[100, 200, 150]), PLAN)
    assert noisy["more"] and noisy["stopped"] == "more" and "(write.mb_s_durable)" in noisy["reason"]
    capped = repeat_decision(rows([300, 301, 299, 300, 300], [500, 900, 200, 400, 700]), PLAN)
    assert (
        not capped["more"]
        and capped["stopped"] == "max"
        and "still" in capped["reason"]
        and "(read.mb_s)" in capped["reason"]
    )


def test_a_zero_rate_never_meets_the_target():
    d = repeat_decision(rows([0, 0, 0], [500, 500, 500]), PLAN)
    assert d["more"]


# Flags, how cells stopped, several hosts, and summary.html ------------------------------------------------------


def test_cell_flags_say_each_flag_once_and_how_many_repetitions_carry_it():
    assert cell_flags(["short", "short;cached", "short"]) == "short;cached (1 of 3)"
    assert cell_flags(["", np.nan, "above-raw"]) == "above-raw (1 of 3)"
    assert cell_flags(["", np.nan]) == "" and cell_flags(["short-transfer"]) == "short-transfer"
    m = frame([row(mb_s=v, rep=i + 1, flags=f) for i, (v, f) in enumerate([(1.0, "short"), (2.0, "short;cached")])])
    m = pd.concat([m, frame([row("ext4", mb_s=5.0)])], ignore_index=True)
    s = summarize(m)
    assert one(s, target="raw")["flags"] == "short;cached (1 of 2)" and one(s, target="ext4")["flags"] == ""


def flagged_and_stopped():
    """small_campaign() with a few flags, and the stop columns aggregate adds (aggregate.with_stops)."""
    m = small_campaign()
    first = m.index[(m["target"] == "raw") & (m["op"] == "write") & (m["block_size"] == MiB)][0]
    m.loc[first, "flags"] = "short"
    m.loc[(m["target"] == "xfs") & (m["op"] == "read"), "flags"] = "above-raw"
    return m, summarize(m).assign(stopped="fixed", stop_reason="fixed: io.repeats is 3")


def test_summary_markdown_shows_flags_and_how_cells_stopped():
    _, summary = flagged_and_stopped()
    lines = summary_markdown(summary, "t").splitlines()
    raw = next(x for x in lines if x.startswith("| Raw |"))
    assert raw.split(" | ")[1].endswith("n=3, flagged short (1 of 3)")
    xfs = next(x for x in lines if x.startswith("| xfs |"))
    assert xfs.count("flagged above-raw") == 2 and "flagged" not in xfs.split(" | ")[1]
    assert any(x.startswith("Flags, where") and "above-raw: a filesystem faster" in x for x in lines)
    # Every cell stopped alike: said once, not in every cell.
    assert "How the cells stopped repeating: all alike, fixed (io.repeats is 3)." in lines
    assert not any("stopped:" in x for x in lines)


def test_summary_markdown_adaptive_stops_per_cell():
    _, summary = flagged_and_stopped()
    reasons = {
        "raw": ("target_ci", "target_ci: the widest 95% CI is 2.1% of the median (read.mb_s) after 3 repeats"),
        "ext3": ("max", "max: 8 repeats, the widest 95% CI is still 9.0% of the median (write.mb_s)"),
        "xfs": ("target_ci", "target_ci: the widest 95% CI is 4.0% of the median (write.mb_s) after 5 repeats"),
    }
    summary["stopped"] = summary["target"].map(lambda t: reasons[t][0])
    summary["stop_reason"] = summary["target"].map(lambda t: reasons[t][1])
    lines = summary_markdown(summary, "t").splitlines()
    assert next(x for x in lines if x.startswith("| ext3 |")).count(", stopped: max") == 4
    assert "How the cells stopped repeating (a cell's write and read repeat together):" in lines
    after = lines[lines.index("How the cells stopped repeating (a cell's write and read repeat together):") :]
    assert after[2] == "| target | 1MiB | 4MiB |"
    assert f"| ext3 | {reasons['ext3'][1]} | {reasons['ext3'][1]} |" in after


def test_several_hosts_are_told_apart_one_host_is_not_named():
    m = small_campaign()
    two = pd.concat([m.assign(host="node1"), m.assign(host="node2", mb_s=m["mb_s"] / 2)], ignore_index=True)
    s = summarize(two)
    assert len(s) == 2 * len(summarize(m))
    text = summary_markdown(s, "t")
    headings = [x for x in text.splitlines() if x.startswith("## ")]
    assert headings == ["## node1 / loop", "## node2 / loop"]
    lines = text.splitlines()
    second = lines[lines.index("## node2 / loop") :]
    assert next(x for x in second if x.startswith("| Raw |")).startswith("| Raw | 950 MB/s")
    assert [x for x in summary_markdown(summarize(m), "t").splitlines() if x.startswith("## ")] == ["## loop"]
    # A baseline from an earlier multi-host measurements.csv: one heading per host.
    earlier = summarize_baselines(two.assign(campaign="last-run"))
    text = summary_markdown(summarize(m), "t", earlier)
    assert [x for x in text.splitlines() if x.startswith("### ")] == [
        "### last-run / node1 / loop",
        "### last-run / node2 / loop",
    ]
    assert "node2" in summary_html(s, "t")


def test_summary_html_holds_the_tables_of_summary_md():
    m, summary = flagged_and_stopped()
    page = summary_html(summary, "fsbench campaign 'today'", summarize_baselines(seed_baseline()))
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<title>fsbench campaign &#x27;today&#x27;</title>" in page
    # Self-contained: no script, nothing fetched.
    assert "<script" not in page and "src=" not in page and "http" not in page
    assert page.count("<table>") == 4  # the campaign's medians, then durable and vs raw; the baseline's two
    assert "<h2>loop</h2>" in page and "<h2>Baselines</h2>" in page and "<h3>3ware-2012</h3>" in page
    # Every median of summary.csv, with its CI and n, as the reader sees it.
    for _, r in summary.iterrows():
        assert f'<span class="median">{number(r["median"])}</span>' in page
        assert f"95% CI {number(r['ci95_low'])}–{number(r['ci95_high'])} · n=3" in page
    assert '<span class="median">312</span>' in page and NO_CI in page  # the seed's raw write
    assert ">short (1 of 3)</span>" in page and page.count(">above-raw</span>") == 2
    assert "<td>44%</td>" in page and "<td>274 MB/s</td>" in page  # vs raw and durable, from the baseline
    assert "all alike, fixed (io.repeats is 3)" in page
    assert "<code>sync; time dd … &amp;&amp; sync</code>" in page


def test_summary_html_escapes_names():
    odd = seed_baseline("<b>pasted & co</b>")
    page = summary_html(summarize(frame([])), "t", summarize_baselines(odd))
    assert "<b>pasted" not in page and "&lt;b&gt;pasted &amp; co&lt;/b&gt;" in page
    assert "No measurements." in page
