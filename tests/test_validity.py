"""Valid figures (fsbench.analysis.validity): which flags invalidate, comparisons that are not comparable, decide
taking no invalid figure as an answer, invalid cells in summary.md/html and throughput.png, the tables turned
when tests outnumber targets, and the latency pictures (load curve, percentile curves from the histograms)."""

import json

import numpy as np
import pandas as pd
import pytest

from fsbench.analysis.aggregate import measurements
from fsbench.analysis.compare import COLUMNS, comparisons, questions
from fsbench.analysis.percentiles import percentile_curves
from fsbench.analysis.repeats import repeat_decision
from fsbench.analysis.stats import summarize
from fsbench.analysis.validity import NOT_COMPARABLE, with_validity
from fsbench.plots import bars as plot_bars
from fsbench.plots import draw, latency
from fsbench.plots import throughput as plots
from fsbench.report.compare_runs import compare_runs
from fsbench.report.summary import summary_html, summary_markdown
from fsbench.toolkit.flags import INVALIDATING, WARNING
from fsbench.toolkit.latency import Histogram

from conftest import frame, row

MiB = 2**20
NOISE = [0.97, 1.0, 1.03]


def cell(target, write, read, flags=("", "", ""), block_size=MiB, **over):
    """Three repeats of a target's write (durable rate `write`) and read, the repeats' flags as given."""
    rows = []
    for i, (f, fl) in enumerate(zip(NOISE, flags, strict=True)):
        rows.append(row(target, "write", write * f, i + 1, block_size, durable=write * f, flags=fl, **over))
        rows.append(row(target, "read", read * f, i + 1, block_size, flags=fl, **over))
    return rows


# Which flags invalidate --------------------------------------------------------------------------------------------


def test_each_invalidating_flag_makes_a_row_invalid_and_warnings_do_not():
    flags = [*INVALIDATING, *WARNING, "short;above-raw;cached", "", None, "drop;straggler"]
    out = with_validity(pd.DataFrame({"flags": flags}))
    assert list(out.columns) == ["flags", "valid", "invalid_reasons"]
    assert out["valid"].tolist() == [False] * len(INVALIDATING) + [True] * len(WARNING) + [False, True, True, True]
    assert out["invalid_reasons"].tolist() == [*INVALIDATING] + [""] * len(WARNING) + ["short;cached", "", "", ""]
    assert set(INVALIDATING) == {"short", "cached", "cache-hit", "short-transfer", "not-steady", "corrupt"} | {
        "client-cache"
    }
    assert set(WARNING) == {"above-raw", "drop", "size-before-runtime", "straggler"}


def test_measurements_csv_gets_valid_and_invalid_reasons_last_from_the_records(tmp_path):
    """Judged in aggregate after above-raw: an old record (flags only) needs no new measurement."""
    records = []
    for i, r in enumerate(
        [
            row("raw", "read", 100.0),
            row("ext4", "read", 150.0),  # faster than raw: above-raw, a warning
            row("xfs", "read", 90.0, flags="short"),
            row("btrfs", "read", 80.0, flags="cached;cache-hit"),
        ]
    ):
        path = tmp_path / f"r{i}.json"
        path.write_text(json.dumps({"row": r, "command": "x"}))
        records.append(str(path))
    m = measurements(records)
    assert list(m.columns[-2:]) == ["valid", "invalid_reasons"]
    by = m.set_index("target")
    assert by.loc["ext4", "flags"] == "above-raw" and by.loc["ext4", "valid"]
    assert by.loc["raw", "valid"] and not by.loc["xfs", "valid"] and not by.loc["btrfs", "valid"]
    assert by.loc["btrfs", "invalid_reasons"] == "cached;cache-hit"
    assert m["valid"].dtype == bool


# Verdicts ----------------------------------------------------------------------------------------------------------


def test_a_clear_difference_on_an_invalid_figure_is_not_comparable():
    m = frame(cell("raw", 300.0, 400.0) + cell("ext4", 30.0, 40.0, flags=("short", "", "")) + cell("xfs", 29.0, 41.0))
    c = comparisons(m)
    assert list(c.columns) == COLUMNS and COLUMNS[-2:] == ["valid_a", "valid_b"]
    ext4_raw = c[(c["a"] == "ext4") & (c["b"] == "raw") & (c["metric"] == "mb_s_durable")].iloc[0]
    # A tenfold difference, but one repeat of ext4 is short: no verdict, the reason in the note; the test still shown.
    assert ext4_raw["verdict"] == NOT_COMPARABLE and ext4_raw["ci_high"] < 1
    assert not ext4_raw["valid_a"] and ext4_raw["valid_b"]
    assert ext4_raw["note"].startswith("not comparable: ext4 not valid (short in 1 of 3)")
    xfs_raw = c[(c["a"] == "xfs") & (c["b"] == "raw") & (c["metric"] == "mb_s_durable")].iloc[0]
    assert xfs_raw["verdict"] == "slower" and xfs_raw["valid_a"] and xfs_raw["valid_b"]
    # No faster/slower rests on an invalid side; valid answers first, then no clear difference, then not comparable.
    decided = c[c["verdict"].isin(["faster", "slower"])]
    assert (decided["valid_a"] & decided["valid_b"]).all()
    rank = c["verdict"].map(lambda v: 2 if v == NOT_COMPARABLE else 1 if v == "no clear difference" else 0)
    assert rank.is_monotonic_increasing
    # A warning leaves the verdict standing.
    warned = frame(cell("raw", 300.0, 400.0) + cell("ext4", 30.0, 40.0, flags=("above-raw;drop",) * 3))
    ext4 = comparisons(warned).query("a == 'ext4' and metric == 'mb_s_durable'").iloc[0]
    assert ext4["verdict"] == "slower" and ext4["valid_a"]


def test_fsbench_compare_runs_say_not_comparable_for_an_invalid_old_run():
    old = frame(cell("ext4", 100.0, 100.0, flags=("short",) * 3))
    new = frame(cell("ext4", 200.0, 200.0))
    c = compare_runs(old, new, "old", "new")
    assert (c["verdict"] == NOT_COMPARABLE).all() and c["valid_a"].all() and not c["valid_b"].any()
    assert c["note"].str.startswith("not comparable: old not valid (short)").all()


def test_decide_takes_no_invalid_figure_as_an_answer():
    """A tenfold difference resting on a short figure is not an answer, and more repeats cannot make it one:
    the cell stops (undecidable) and says why, rather than `decided`."""
    plan = {"min": 3, "max": 10, "target_ci": None, "decide": True}
    ext4 = cell("ext4", 100.0, 500.0, flags=("short", "short", "short"))
    xfs = cell("xfs", 10.0, 50.0)
    asked = questions(frame(ext4), frame(xfs), plan["max"])
    assert [(q["verdict"], q["open"], q["valid_a"], q["valid_b"]) for q in asked] == [
        (NOT_COMPARABLE, False, False, True)
    ] * 2
    d = repeat_decision(ext4, plan, asked)
    assert not d["more"] and d["stopped"] == "undecidable"
    assert "ext4 vs xfs durable write: not comparable (ext4 not valid (short))" in d["reason"]
    assert "decided:" not in d["reason"]
    assert d["questions"][0]["valid_a"] is False
    # The same figures, valid: decided.
    valid = cell("ext4", 100.0, 500.0)
    d = repeat_decision(valid, plan, questions(frame(valid), frame(xfs), plan["max"]))
    assert d["stopped"] == "decided" and "ext4 vs xfs durable write: faster" in d["reason"]


# summary.md and summary.html ---------------------------------------------------------------------------------------


def test_summary_shows_invalid_cells_as_such_and_leads_with_valid_verdicts():
    m = frame(cell("raw", 300.0, 400.0) + cell("ext4", 30.0, 40.0, flags=("short",) * 3) + cell("xfs", 29.0, 41.0))
    summary, verdicts = summarize(m), comparisons(m)
    md = summary_markdown(summary, "t", comparisons=verdicts)
    lines = md.splitlines()
    table = [x for x in lines if x.startswith("| ") and " vs " in x.split("|")[1] and "a vs b" not in x]
    said = [x.split("|")[5].strip() for x in table]
    # Valid answers first (xfs vs raw: slower, twice), then the not comparable ones with their reason.
    first_nc = next(i for i, s in enumerate(said) if s.startswith(NOT_COMPARABLE))
    assert all(s in ("faster", "slower") for s in said[:first_nc]) and first_nc >= 2
    assert all(s.startswith(NOT_COMPARABLE) for s in said[first_nc:])
    assert "not comparable: ext4 not valid (short)" in said
    assert "Not comparable: 4 of 6 comparisons rest on a figure that is not valid (short 4)." in md
    assert "short: the figure took under a second" in md and "(not valid)." in md  # the flags line says which
    ext4 = next(x for x in lines if x.startswith("| ext4 |"))
    assert ext4.startswith("| ext4 | not valid (short): 30.0 MB/s")
    assert "(not valid)" in [x for x in lines if x.startswith("| ext4 |")][1]  # durable and share of raw
    xfs = next(x for x in lines if x.startswith("| xfs |"))
    assert "not valid" not in xfs
    page = summary_html(summary, "t", comparisons=verdicts)
    assert page.count('<td class="invalid">') == 2  # ext4's write and read
    assert '<span class="invalid-mark">not valid</span>' in page
    assert '<td class="verdict not-comparable">not comparable: ext4 not valid (short)</td>' in page
    assert '<td class="verdict slower">slower</td>' in page


def test_tests_are_rows_when_they_outnumber_the_targets():
    """2 block sizes x 2 patterns x buffered/direct on 2 targets: 16 rows of op and test, a column per target."""
    rows = []
    for target in ("raw", "ext4"):
        for bs in (MiB, 4 * MiB):
            for pattern in ("seq", "rand"):
                for direct in (False, True):
                    rows += cell(target, 100.0, 200.0, block_size=bs, pattern=pattern, direct=direct)
    lines = summary_markdown(summarize(frame(rows)), "t").splitlines()
    tables = [i for i, x in enumerate(lines) if x.startswith("| test |")]
    assert lines[tables[0]] == "| test | Raw | ext4 |"
    body = [x for x in lines[tables[0] + 2 :] if x.startswith("|")][:16]
    assert len(body) == 16 and body[0].startswith("| write 1MiB seq buffered |")
    assert len({x.split("|")[1] for x in body}) == 16
    # Fewer tests than targets: targets stay the rows (the seed's layout).
    few = frame(cell("raw", 300.0, 400.0) + cell("ext4", 30.0, 40.0) + cell("xfs", 29.0, 41.0))
    assert "| target | write 1MiB | read 1MiB |" in summary_markdown(summarize(few), "t")


# throughput.png ----------------------------------------------------------------------------------------------------


def test_throughput_hatches_invalid_cells_and_colours_no_verdict_on_them():
    m = frame(cell("raw", 300.0, 400.0) + cell("ext4", 30.0, 40.0, flags=("short",) * 3) + cell("xfs", 29.0, 41.0))
    with plot_bars._style():
        fig = plots.throughput(m, summarize(m), comparisons(m))
    write = fig.axes[0]
    bars = [p for p in write.patches if p.get_height() > 0]
    hatched = [p for p in bars if p.get_hatch()]
    assert len(bars) == 3 and len(hatched) == 1
    assert hatched[0].get_height() == pytest.approx(30.0, rel=0.05)  # ext4's bar
    texts = {t.get_text(): t for t in write.texts if "×" in t.get_text() or t.get_text() == "n/c"}
    assert "n/c" in texts and texts["n/c"].get_color() == plot_bars.VERDICT_COLOURS[NOT_COMPARABLE]
    slower = [t for t in texts.values() if t.get_text() != "n/c"]
    assert len(slower) == 1 and slower[0].get_color() == plot_bars.VERDICT_COLOURS["slower"]  # xfs
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("not valid") for t in legend)
    # efficiency.png: ext4's shares of raw hatched too, xfs's solid.
    with plot_bars._style():
        fig = plots.efficiency(summarize(m))
    hatched = [p.get_height() for ax in fig.axes for p in ax.patches if p.get_hatch()]
    solid = [p.get_height() for ax in fig.axes for p in ax.patches if not p.get_hatch() and p.get_height() > 0]
    assert sorted(hatched) == pytest.approx([0.1, 0.1], rel=0.05) and len(solid) == 2


# Latency pictures --------------------------------------------------------------------------------------------------


def _record(r: dict, latencies_ns: list[int], streams: int = 2) -> dict:
    """A measurement record as the engines write it: the row and each stream's histogram."""
    parts = []
    for s in range(streams):
        hist = Histogram()
        for ns in latencies_ns[s::streams]:
            hist.record(ns)
        parts.append({"latency": hist.as_record()})
    return {"row": r, "streams": parts, "command": "x"}


def test_percentile_curves_pool_the_streams_and_repeats_of_a_cell():
    # 10,000 operations per repeat: 1..10000 µs, so p50 = 5000 µs, p99 = 9900 µs, p99.99 = 10000 µs (±1.6%).
    latencies = [i * 1000 for i in range(1, 10001)]
    records = [_record(row("ext4", "read", 100.0, rep), latencies) for rep in (1, 2)]
    few = _record(row("xfs", "read", 100.0), latencies[:500])  # 500 operations: no p99.9 or beyond
    meta = {"rows": [row("ext4", "create", 1.0, workload="metadata")], "streams": {"create": []}}
    curves = percentile_curves([*records, few, meta])
    ext4 = curves[curves["target"] == "ext4"].set_index("percentile")
    assert ext4["ops"].eq(20000).all()
    for p, expected in ((50.0, 5000.0), (99.0, 9900.0), (99.99, 9999.0)):
        assert ext4.loc[p, "latency_us"] == pytest.approx(expected, rel=0.016)
    xfs = curves[curves["target"] == "xfs"]
    assert xfs["percentile"].max() == 99.5 and set(curves["target"]) == {"ext4", "xfs"}
    # A mix: its write row's histogram is the write streams'.
    mix = _record(row("ext4", "read", 1.0, pattern="randrw"), [1000] * 200, streams=1)
    mix |= {"rows": [mix["row"], row("ext4", "write", 1.0, pattern="randrw")]}
    mix["mix"] = {"write": {"streams": _record(row(), [50000] * 200, streams=1)["streams"]}}
    found = percentile_curves([mix]).set_index(["op", "percentile"])["latency_us"]
    assert found[("read", 50.0)] == pytest.approx(1.0, rel=0.02)
    assert found[("write", 50.0)] == pytest.approx(50.0, rel=0.02)


def test_latency_pictures_draw_a_line_per_target_through_its_depths(tmp_path):
    rows = []
    for target, base in (("raw", 50.0), ("xfs", 80.0)):
        for depth in (1, 8, 32):
            for rep in (1, 2):
                rows.append(
                    row(
                        target,
                        "read",
                        100.0,
                        rep,
                        4096,
                        pattern="rand",
                        iodepth=depth,
                        iops=20000.0 * np.sqrt(depth),
                        lat_p50_us=base * depth**0.5,
                        lat_p99_us=4 * base * depth**0.5,
                        flags="short" if target == "xfs" and depth == 32 else "",
                    )
                )
    m = frame(rows)
    with plot_bars._style():
        fig = latency.latency(m)
        (ax,) = [a for a in fig.axes if a.get_visible()]
        assert ax.get_title() == "read · rand 4KiB" and ax.get_xscale() == "log" and ax.get_yscale() == "log"
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 3]
        assert len(lines) == 4  # p99 and p50 of each target, through qd1, qd8, qd32
        assert {t.get_text() for t in ax.texts} == {"qd1", "qd8", "qd32"}
        hollow = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 1 and ln.get_markerfacecolor() == "white"]
        assert len(hollow) == 2  # xfs at qd32, p99 and p50: not valid
        curves = percentile_curves(
            [_record(r, [1000 * (i % 100 + 1) * int(r["iodepth"]) for i in range(2000)]) for r in rows]
        )
        fig = latency.latency_percentiles(curves)
        (ax,) = [a for a in fig.axes if a.get_visible()]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["p50", "p90", "p99", "p99.9", "p99.99"]
        assert len(ax.get_lines()) == 6  # 2 targets x 3 depths
        paths = draw.plot_campaign(m, summarize(m), tmp_path, curves=curves)
    assert {"latency.png", "latency_percentiles.png"} <= {p.name for p in paths}
