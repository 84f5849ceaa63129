import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from fsbench.analysis.compare import comparisons
from fsbench.analysis.stats import summarize, summarize_baselines
from fsbench.measurement.rows import COLUMNS
from fsbench.plots import bars, draw, latency
from fsbench.plots import throughput as plots
from fsbench.plots.baselines import beside_baselines as _beside_baselines
from fsbench.plots.draw import plot_campaign
from fsbench.plots.throughput import efficiency as _efficiency
from fsbench.plots.throughput import throughput as _throughput

from conftest import REPO, seed_baseline

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
                        rows.append(
                            {
                                "campaign": "c",
                                "host": "h",
                                "array": array,
                                "target": target,
                                "fs_type": target,
                                "op": op,
                                "pattern": "seq",
                                "block_size": bs,
                                "direct": False,
                                "streams": 1,
                                "rep": rep,
                                "bytes": 2**30,
                                "seconds": 2**30 / mb_s / 1e6,
                                "mb_s": mb_s,
                                "seconds_durable": 2**30 / durable / 1e6,
                                "mb_s_durable": durable,
                                "engine": "python",
                                "cache": "drop",
                                "cached_before": 0.0,
                                "started_at": "2024-01-01T00:00:00Z",
                                "flags": "",
                            }
                        )
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


TODAY = {"raw": (1900, 2000), "ext3": (420, 1500), "ext4": (1300, 1800), "xfs": (1500, 1900), "btrfs": (900, 1700)}


def bar_heights(ax):
    return sorted(round(p.get_height()) for p in ax.patches)


def test_plot_campaign_with_baselines(tmp_path):
    m = measurements(arrays=("loop",), targets=TODAY)
    paths = plot_campaign(m, summarize(m), tmp_path, seed_baseline())
    assert names(paths) == sorted([*ALL, "baselines.png", "baselines.svg"])
    assert_written(paths)
    svg = (tmp_path / "baselines.svg").read_text()  # text stays text (svg.fonttype none)
    for said in ("3ware-2012 (baseline)", "c / loop (this campaign)", "dd-style", "MB/s", "write", "read", "bs 4MiB"):
        assert said in svg, said
    for figure in ("312", "419", "137", "320", "340", "269", "410"):
        assert f">{figure}<" in svg, figure
    assert "flush not included" in svg  # the title says which figure it is: dd's, not durable


def test_baselines_figure_bars_share_one_axis():
    m = measurements(arrays=("loop",), targets=TODAY)
    summary, earlier = summarize(m), summarize_baselines(seed_baseline())
    fig = _beside_baselines(summary, earlier)
    write, read = fig.axes[0], fig.axes[1]
    assert (write.get_title(loc="left"), read.get_title(loc="left")) == ("write", "read")
    assert write.get_ylim() == read.get_ylim() and write.get_ylim()[1] > 2000 * 1.02
    assert [t.get_text() for t in write.get_xticklabels()] == list(TODAY)
    # Campaign medians (5 targets x 2 block sizes) beside the seed's dd-style rates (mb_s), not its durable ones.
    medians = summary.set_index(["op", "target", "block_size"])["median"]
    assert bar_heights(write) == sorted([*(round(v) for v in medians["write"]), 312, 137, 269])
    assert bar_heights(read) == sorted([*(round(v) for v in medians["read"]), 419, 320, 340, 410])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [
        "c / loop (this campaign), bs 1MiB",
        "c / loop (this campaign), bs 4MiB",
        "3ware-2012 (baseline), bs 1MiB",
        "3ware-2012 (baseline), bs 4MiB",
    ]


def test_baselines_figure_only_with_baselines_and_always_then(tmp_path):
    m = measurements(arrays=("loop",), targets={"raw": (1900, 2000)}, block_sizes=(MiB,), reps=1)  # quick to draw
    for none in (None, seed_baseline().iloc[:0]):
        assert "baselines.png" not in names(plot_campaign(m, summarize(m), tmp_path / "n", none))
    # From CSV files, as scripts/plot.py reads them; two baselines, one an earlier measurements.csv.
    earlier = pd.concat([seed_baseline(), m.assign(campaign="last-run")], ignore_index=True)
    earlier.to_csv(tmp_path / "b.csv", index=False)
    got = plot_campaign(m, summarize(m), tmp_path / "csv", pd.read_csv(tmp_path / "b.csv"))
    assert "baselines.png" in names(got)
    assert "last-run / loop (baseline)" in (tmp_path / "csv" / "baselines.svg").read_text()
    # The workflow expects the file whenever there are baselines: with no campaign rows, or nothing to show.
    assert names(plot_campaign(m.iloc[:0], summarize(m.iloc[:0]), tmp_path / "e", seed_baseline())) == [
        "baselines.png",
        "baselines.svg",
    ]
    odd = seed_baseline().assign(op="")
    assert "baselines.png" in names(plot_campaign(m, summarize(m), tmp_path / "o", odd))


# The throughput plot with few, noisy repeats; several hosts ----------------------------------------------------


def noisy(reps=2, hosts=("h",)):
    """Two repeats far apart: Student t with one degree of freedom (12.7) makes whiskers many times the bars."""
    frames = []
    for i, host in enumerate(hosts):
        m = measurements(arrays=("demo",), targets=TODAY, reps=reps).assign(host=host)
        noise = np.random.default_rng(7 + i).uniform(0.5, 1.5, len(m))
        m["mb_s"] *= noise
        m["mb_s_durable"] *= noise
        frames.append(m)
    return pd.concat(frames, ignore_index=True)


def drawn(fig):
    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def marks(ax, marker):
    return [line for line in ax.lines if line.get_marker() == marker]


def test_throughput_axis_follows_bars_and_dots_and_cuts_far_whiskers_visibly():
    m = noisy()
    m = plots.durable_view(m)  # the plot shows writes by their durable rate
    s = summarize(m)
    assert s["ci95_high"].max() > 3 * s["mean"].max()  # the reviewer's case: whiskers far above every bar
    fig = _throughput(m, s)
    write, read = fig.axes[0], fig.axes[1]
    top = write.get_ylim()[1]
    assert read.get_ylim()[1] == top
    assert max(s["mean"].max(), m["mb_s"].max()) <= top <= 1.15 * m["mb_s"].max()
    for ax, op in ((write, "write"), (read, "read")):
        cells = s[s["op"] == op]
        above, below = cells[cells["ci95_high"] > top], cells[cells["ci95_low"] < 0]
        assert len(above) > 0 and len(marks(ax, "^")) == len(above) and len(marks(ax, "v")) == len(below)
        assert len(marks(ax, "_")) == 2 * len(cells) - len(above) - len(below)  # a cap at every end within the axis
        # Each cut whisker says where it ends, above the axis; every one is drawn up to the edge, no further.
        texts = [t.get_text() for t in ax.texts]
        assert all(f"{v:.0f}" in texts for v in above["ci95_high"])
        whiskers = [line for line in ax.lines if len(line.get_ydata()) == 2]
        assert len(whiskers) == len(cells) and all(max(w.get_ydata()) <= top for w in whiskers)
        assert all(min(w.get_ydata()) >= 0 for w in whiskers)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "CI goes on past the axis (▲ end written above)" in legend
    assert {"block size 1MiB", "block size 4MiB", "a repetition", "95% CI of the mean"} <= set(legend)


def test_throughput_keeps_whiskers_that_reach_little_further():
    m = measurements(arrays=("demo",), targets=TODAY, reps=3)  # 2% noise: short whiskers
    m = plots.durable_view(m)  # the plot shows writes by their durable rate
    s = summarize(m)
    fig = _throughput(m, s)
    assert fig.axes[0].get_ylim()[1] >= s["ci95_high"].max()
    assert not marks(fig.axes[0], "^") and not marks(fig.axes[0], "v")
    assert not any("past the axis" in t.get_text() for t in fig.legends[0].get_texts())


@pytest.mark.parametrize("block_sizes", [(MiB, 4 * MiB), (MiB, 4 * MiB, 16 * MiB, 64 * MiB)])
def test_throughput_value_labels_collide_with_nothing(block_sizes):
    m = noisy() if len(block_sizes) == 2 else measurements(arrays=("d",), targets=TODAY, block_sizes=block_sizes)
    verdicts = comparisons(m)
    m = plots.durable_view(m)  # the plot shows writes by their durable rate
    s = summarize(m)
    fig = _throughput(m, s, verdicts)
    renderer = drawn(fig)
    for ax in fig.axes:
        box = ax.get_window_extent(renderer)
        values = [t for t in ax.texts if t.get_text() in {f"{v:.0f}" for v in s["mean"]} and t.xy[1] == 0]
        assert len(values) == len(s) // 2
        extents = [t.get_window_extent(renderer) for t in values]
        # Under the axis, so clear of the bars' dots and whiskers, and of each other...
        assert all(e.y1 <= box.y0 for e in extents)
        assert not any(a.overlaps(b) for i, a in enumerate(extents) for b in extents[i + 1 :])
        # ...and above the target names.
        names = [t.get_window_extent(renderer) for t in ax.get_xticklabels()]
        assert max(n.y1 for n in names) <= min(e.y0 for e in extents)
        # The ends of cut whiskers, written above the axis, stay clear of the title.
        title = ax.title.get_window_extent(renderer)
        ends = [t.get_window_extent(renderer) for t in ax.texts if t not in values and "×" not in t.get_text()]
        assert all(e.y0 >= box.y1 and not e.overlaps(title) for e in ends)
        # Each filesystem's share of raw sits above its bar, clear of the others and of the cut whiskers' ends.
        shares = [t.get_window_extent(renderer) for t in ax.texts if "×" in t.get_text()]
        assert shares and not any(a.overlaps(b) for i, a in enumerate(shares) for b in shares[i + 1 :] + ends)


def test_several_hosts_get_their_own_panels_and_dots():
    m = noisy(hosts=("node1", "node2"))
    m = plots.durable_view(m)  # the plot shows writes by their durable rate
    s = summarize(m)
    fig = _throughput(m, s)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == [
        "node1 / demo — durable write",
        "node1 / demo — read",
        "node2 / demo — durable write",
        "node2 / demo — read",
    ]
    for ax, (host, op) in zip(fig.axes, [(h, o) for h in ("node1", "node2") for o in ("write", "read")], strict=True):
        dots = np.concatenate([c.get_offsets()[:, 1] for c in ax.collections])
        mine = m[(m["host"] == host) & (m["op"] == op)]["mb_s"]
        assert sorted(np.round(dots, 6)) == sorted(np.round(mine, 6))  # that host's repetitions, no other's
    assert [ax.get_title() for ax in _efficiency(s).axes][:2] == ["node1 / demo — write", "node1 / demo — read"]
    # One host: titles as before, no host in them.
    titles = [ax.get_title() for ax in _throughput(noisy(), summarize(noisy())).axes]
    assert titles == ["demo — durable write", "demo — read"]
    # Beside baselines: each host of the campaign its own colour.
    fig = _beside_baselines(s, summarize_baselines(seed_baseline()))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "c / node1 / demo, bs 1MiB" not in legend and "c / node2 / demo (this campaign), bs 4MiB" in legend


def test_iops_and_latency_plots_tell_hosts_and_arrays_apart(tmp_path):
    """An all-hosts campaign has the same target on several hosts: each gets its own bar and percentile line."""
    rows = []
    for host in ("n1", "n2", "all", "n1@all"):
        for op in ("write", "read"):
            rows.append(
                {
                    "host": host,
                    "array": "p",
                    "target": "path",
                    "op": op,
                    "pattern": "rand",
                    "block_size": 4096,
                    "direct": True,
                    "streams": 1,
                    "iodepth": 32,
                    "iops": 1000.0 + len(host),
                    "lat_p50_us": 10.0,
                    "lat_p99_us": 20.0,
                    "lat_p999_us": 30.0,
                }
            )
    frame = pd.DataFrame(rows)
    with bars._style():
        for make in (latency.iops, latency.latency):
            fig = make(frame)
            if make is latency.latency:  # one line per host's target
                labels = {t.get_text() for t in fig.legends[0].get_texts()}
                assert {"n1 path", "n2 path", "all path", "n1@all path"} <= labels
            fig.savefig(tmp_path / "x.png")


def test_throughput_leads_with_durable_writes_and_each_filesystems_verdict_against_raw():
    """Issue 14: the first plot answers: writes by their durable rate (the buffered rate stays in the durable plot),
    each filesystem's share of raw coloured by the verdict of comparisons.csv."""
    m = measurements()  # the seed: raw 312/419, ext3 137/320, xfs 269/410 MB/s; durable = 0.85 × buffered
    m.loc[(m["target"] == "xfs") & (m["op"] == "read"), "mb_s"] = [410 * f for f in (0.8, 1.3, 1.0) * 2]
    verdicts = comparisons(m)
    fig = _throughput(m, summarize(m), verdicts)
    write, read = fig.axes[0], fig.axes[1]
    assert write.get_title() == "seed — durable write" and read.get_title() == "seed — read"
    durable = m[m["op"] == "write"].groupby(["target", "block_size"], sort=False)["mb_s_durable"].mean()
    heights = sorted(round(p.get_height(), 6) for p in write.patches)
    assert heights == sorted(round(v, 6) for v in durable)
    colours = bars.VERDICT_COLOURS
    said = {
        (ax.get_title(), t.get_text(), t.get_color()) for ax in (write, read) for t in ax.texts if "×" in t.get_text()
    }
    # ext3 writes at 0.44 of raw, clearly slower (twice: one per block size); xfs reads scatter around raw.
    found = comparisons(m).query("vs == 'target' and b == 'raw' and block_size == @MiB")
    ext3 = found.query("a == 'ext3' and metric == 'mb_s_durable'").iloc[0]
    xfs = found.query("a == 'xfs' and op == 'read'").iloc[0]
    assert ext3["verdict"] == "slower" and ext3["ratio"] == pytest.approx(137 / 312, rel=0.05)
    assert ("seed — durable write", f"{ext3['ratio']:.2f}×", colours["slower"]) in said
    assert xfs["verdict"] == "no clear difference" and xfs["ratio"] == pytest.approx(410 / 419, rel=0.05)
    assert ("seed — read", f"{xfs['ratio']:.2f}×", colours["no clear difference"]) in said
    assert sum("×" in t.get_text() for ax in (write, read) for t in ax.texts) == 2 * 2 * 2  # 2 fs, 2 sizes, 2 ops
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "0.5× = share of raw, clearly slower" in legend
    # The colours are comparisons.csv's verdicts, not made again from the measurements.
    said_faster = verdicts.assign(verdict="faster")
    recoloured = _throughput(m, summarize(m), said_faster)
    assert {t.get_color() for ax in recoloured.axes for t in ax.texts if "×" in t.get_text()} == {colours["faster"]}
    # No raw, no verdicts against it.
    no_raw = m[m["target"] != "raw"]
    assert not any(
        "×" in t.get_text() for ax in _throughput(no_raw, summarize(no_raw), comparisons(no_raw)).axes for t in ax.texts
    )


def test_a_campaign_of_one_block_per_stream_gets_every_plot(tmp_path):
    """io.size equal to the block size, one repeat: every cell has one operation, too few for a percentile curve
    (a p50 needs 2); the campaign still ends with every plot the workflow expects, that one saying why it is
    empty (it used to fail in rule plots, latency_percentiles.png missing)."""
    from conftest import run_campaign

    data = tmp_path / "data"
    data.mkdir()
    config = {
        "campaign": "oneblock",
        "scratch": str(tmp_path / "scratch"),
        "arrays": {"p": {"kind": "path", "path": str(data)}},
        "io": {"size": "1MiB", "block_sizes": ["1MiB"], "repeats": 1},
    }
    run_campaign(tmp_path / "work", config)
    results = tmp_path / "work" / "results" / "oneblock"
    assert set(pd.read_csv(results / "measurements.csv").ops) == {1}
    for name in ("throughput", "iops", "latency", "latency_percentiles"):
        assert (results / "plots" / f"{name}.png").stat().st_size > 0


def test_the_plot_table(tmp_path):
    """Each row: its figure function, its inputs, its caption; and which plots a campaign has (the files the plots
    rule lists): a new plot adds its line below."""
    from fsbench.campaign.config import validate
    from fsbench.plots.table import PLOTS, campaign_plots

    for plot in PLOTS.values():
        module, function = plot.figure.split(".")
        assert callable(getattr(draw.MODULES[module], function)), plot.name
        assert set(plot.args) <= set(draw.Inputs.__dataclass_fields__) and (REPO / plot.caption).is_file()

    def has(**extra):
        arrays, io = {"demo": {"kind": "loop", "size": "1GiB"}}, {"size": "64MiB", "block_sizes": ["1MiB"]}
        config = {"campaign": "c", "scratch": str(tmp_path), "arrays": arrays, "io": io}
        config["filesystems"] = {"ext4": {"type": "ext4"}}
        return [p.name for p in campaign_plots(validate(config | extra))]

    everyday = ["throughput", "efficiency", "durable", "iops", "latency", "latency_percentiles", "timeseries"]
    assert has() == everyday
    assert has(raw=False) == [n for n in everyday if n != "efficiency"]
    assert has(io={"engine": "dd", "size": "64MiB", "block_sizes": ["1MiB"]}) == everyday[:4]  # no per-call times
    assert has(metadata={"files": 100})[-1] == "metadata"
