"""End to end: the seed's experiment (raw + ext3 + xfs, bs 1MiB and 4MiB, 2 repeats) on a real loop device."""

import base64
import io
import json
import math
import shutil
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from browser import Browser, find_browser
from PIL import Image

from fsbench.measurement.rows import COLUMNS
from fsbench.report.document import number
from fsbench.toolkit.flags import INVALIDATING
from fsbench.toolkit.sizes import parse_size

from conftest import REPO, SNAKEMAKE, held, missing, needs_root, private_scratch, run_campaign

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


@pytest.fixture(scope="module")
def seed_report(seed_run):
    """The campaign's Snakemake HTML report, made as `make report` makes it."""
    work, _, _ = seed_run
    report = work / "results/seed/report.html"
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-d", str(work), "--cores", "1", "--report", str(report)]
    subprocess.run([*argv, "--configfile", str(work / "campaign.yaml")], check=True, capture_output=True, timeout=300)
    return report


def test_every_row_satisfies_the_contract(seed_run):
    work, scratch, _ = seed_run
    df = pd.read_csv(work / "results/seed/measurements.csv", keep_default_na=False, na_values=[""])
    assert len(df) == 24
    assert list(df.columns[: len(COLUMNS)]) == COLUMNS and list(df.columns[-2:]) == ["valid", "invalid_reasons"]
    # Valid unless a flag invalidates (128 MiB on this VM is mostly `short`); the reasons are those flags.
    reasons = df["flags"].fillna("").map(lambda f: ";".join(x for x in f.split(";") if x in INVALIDATING))
    assert (df.invalid_reasons.fillna("") == reasons).all() and (df.valid == (reasons == "")).all()
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
    # Repeats run in rounds (every cell's rep 1, then rep 2), and within a round the targets one after
    # another, raw, then ext3, then xfs, never overlapping; each read follows its own write.
    df["t"] = pd.to_datetime(df.started_at)
    spans = df.groupby(["rep", "target"]).t.agg(["min", "max"])
    order = [(rep, target) for rep in (1, 2) for target in ("raw", "ext3", "xfs")]
    for before, after in zip(order, order[1:], strict=False):
        assert spans.loc[before, "max"] < spans.loc[after, "min"], (before, after)
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
    assert (summary.ci95_low > 0).all()  # an interval of the geometric mean: never below zero
    # Verdicts: ext3 and xfs against raw and each other, 1MiB against 4MiB per target; summary.md opens with them.
    verdicts = pd.read_csv(out / "comparisons.csv")
    assert {"a", "b", "ratio", "ci_low", "ci_high", "p_value", "verdict", "metric"} <= set(verdicts.columns)
    assert set(verdicts.verdict) <= {"faster", "slower", "no clear difference", "not comparable"}
    assert (verdicts.ci_low > 0).all()
    # No verdict rests on a figure that is not valid: every repeat of both sides valid, or `not comparable`.
    measured = pd.read_csv(out / "measurements.csv")
    valid = measured.groupby(["target", "op", "block_size"]).valid.all()
    for v in verdicts.itertuples():
        if v.vs == "target":
            sides = [(v.a, int(v.block_size)), (v.b, int(v.block_size))]
        else:
            sides = [(v.target, parse_size(v.a)), (v.target, parse_size(v.b))]
        both = [bool(valid[(t, v.op, bs)]) for t, bs in sides]
        assert [v.valid_a, v.valid_b] == both, v
        assert (v.verdict == "not comparable") == (not all(both)), v
        assert v.note.startswith("not comparable: ") if not all(both) else "not valid" not in str(v.note), v
    pairs = set(zip(verdicts.a, verdicts.b, strict=True))
    assert {("ext3", "raw"), ("xfs", "raw"), ("ext3", "xfs"), ("1MiB", "4MiB")} <= pairs
    assert (out / "summary.md").read_text().split("\n")[2].startswith("Verdicts, a relative to b")
    raw = summary[summary.target == "raw"]
    assert (raw.efficiency_vs_raw == 1).all()
    md = (out / "summary.md").read_text()
    assert "ext3" in md and "xfs" in md and "MB/s" in md
    # How each cell stopped, and the flags of its repetitions; summary.html: summary.md's tables as a page.
    assert (summary.stopped == "fixed").all() and (summary.stop_reason == "fixed: io.repeats is 2").all()
    assert "flags" in summary.columns
    page = (out / "summary.html").read_text()
    assert "How the cells stopped repeating: all alike, fixed (io.repeats is 2)." in md
    assert "all alike, fixed (io.repeats is 2)" in page
    for r in summary.itertuples():
        assert f'<span class="median">{number(r.median)}</span>' in page, r
        assert f"95% CI {number(r.ci95_low)}–{number(r.ci95_high)} · n=2" in page, r
    # A cell with a repeat that is not valid is shown as such, greyed and hatched in the page.
    invalid = summary["flags"].fillna("").map(lambda f: any(x.split(" (")[0] in INVALIDATING for x in f.split(";")))
    assert page.split("<h2>Baselines</h2>")[0].count('<td class="invalid">') == invalid.sum()
    assert md.count("not valid (") >= invalid.sum()
    assert "<h2>Baselines</h2>" in page and "<h3>3ware-2012</h3>" in page
    for name in ["throughput", "durable", "efficiency", "latency", "latency_percentiles"]:
        for ext in ["png", "svg"]:
            assert (out / "plots" / f"{name}.{ext}").stat().st_size > 1000
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["host"]["kernel"] and prov["host"]["tools"]["mkfs.xfs"]
    assert list(prov["machines"]) == [socket.gethostname()] and prov["machines"][socket.gethostname()]["cpus"] > 0
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    assert f"[{prov['machines'][socket.gethostname()]['transparent_hugepage']}]" in thp  # the mode in brackets
    demo = prov["arrays"]["demo"]
    assert demo["devices"][0]["loop_direct_io"] == "1"
    ext3 = demo["targets"]["ext3"]
    assert ext3["mkfs_argv"][-6:-1] == ["-j", "-T", "largefile4", "-b", "4096"]
    # and on a loop array no discard, which would punch holes in the preallocated images
    assert "lazy_itable_init=0,lazy_journal_init=0,nodiscard" in ext3["mkfs_argv"]
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


def test_baselines_and_report(seed_run, seed_report):
    work, scratch, _ = seed_run
    base = pd.read_csv(work / "results/seed/baselines.csv")
    assert list(base.columns) == COLUMNS and len(base) == 7
    assert (base.campaign == "3ware-2012").all() and (base.engine == "dd-log").all()
    raw_write = base[(base.target == "raw") & (base.op == "write")].iloc[0]
    assert raw_write.bytes == 21474836480 and raw_write.seconds == 68.929 and raw_write.seconds_durable == 78.373
    html = seed_report.read_text()
    for name in ("throughput.png", "durable.png", "efficiency.png", "summary.csv", "summary.html", "provenance.json"):
        assert name in html


# The report in a real browser -----------------------------------------------------------------------------
# The report is a single-page app: every plot is an item of the category "Plots", shown only when clicked.

ROW = "[...document.querySelectorAll('nav table tbody tr')].find(tr => tr.cells[0].textContent.trim() === {path!r})"
SHOWN_IMG = "[...document.querySelectorAll('#app img')].find(img => !img.closest('nav'))"  # the content pane's


def menu_link(label):
    return f"[...document.querySelectorAll('nav a')].find(a => a.textContent.trim() === {label!r})"


def crumb(label):
    return f"[...document.querySelectorAll('nav ol a')].find(a => a.textContent.trim() === {label!r})"


def rst_text(name):
    """A caption's text as a reader sees it: the .rst without its ``literal`` marks, spaces collapsed."""
    return " ".join((REPO / "captions" / f"{name}.rst").read_text().replace("``", "").split())


def data_uri_bytes(uri, filename):
    head, _, payload = uri.partition(";base64,")
    assert head.endswith(f";filename={filename}"), head
    return base64.b64decode(payload)


def open_category(b, category, files):
    """From anywhere: home, then the category; it must list exactly `files`."""
    b.click("document.querySelector('nav ol li a')")  # the home breadcrumb
    b.click(menu_link(category))
    paths = b.wait_for(
        f"""(() => {{
            const crumbs = document.querySelector('nav ol').innerText;
            const rows = [...document.querySelectorAll('nav table tbody tr')];
            return crumbs.includes({category!r}) && rows.length ? rows.map(tr => tr.cells[0].textContent.trim()) : null;
        }})()"""
    )
    assert sorted(paths) == sorted(files), f"{category} lists {paths}"


def read_caption(b, path):
    """Click the row's (i) button; the navbar then describes the item. Returns the caption's text."""
    b.click(f"{ROW.format(path=path)}.querySelectorAll('a[type=button]')[1]")
    text = b.wait_for(
        f"""(() => {{
            const crumbs = document.querySelector('nav ol').innerText;
            const caption = document.querySelector('nav li.prose');
            return crumbs.includes({path!r}) && caption ? caption.innerText : null;
        }})()"""
    )
    return " ".join(text.split())


def test_report_shows_every_plot_in_a_real_browser(seed_run, seed_report, tmp_path):
    """Open report.html in headless Chromium and click through it as a reader would: every plot renders
    (the very PNG of plots/, decoded and painted), with its caption; the tables and provenance are there."""
    exe = find_browser()
    if exe is None:
        missing("chromium", "no Chromium (apt-get install chromium, or set FSBENCH_BROWSER): `make setup` installs it")
    work, _, _ = seed_run
    out = work / "results/seed"
    plots = sorted(png.stem for png in (out / "plots").glob("*.png"))  # every plot the campaign made
    assert {"throughput", "durable", "efficiency", "baselines"} <= set(plots)  # raw is measured, a baseline given
    shots = tmp_path / "screenshots"
    shots.mkdir()

    with Browser(exe, tmp_path / "profile", failure_shot=shots / "failure.png") as b:
        b.open(seed_report.as_uri())
        b.wait_for(f"!!({menu_link('Plots')} && {menu_link('Tables')} && {menu_link('Provenance')})")
        assert "ran only write and read" in b.js("document.body.innerText")  # the workflow description
        b.screenshot(shots / "start.png")

        open_category(b, "Plots", [f"results/seed/plots/{name}.png" for name in plots])
        for name in plots:
            path = f"results/seed/plots/{name}.png"
            # the eye button shows the plot in the content pane
            b.click(f"{ROW.format(path=path)}.querySelectorAll('a[type=button]')[0]")
            img = b.wait_for(
                f"""(() => {{
                    const img = {SHOWN_IMG};
                    if (!img || !img.src.includes(';filename={name}.png;') || !img.complete) return null;
                    img.scrollIntoView({{block: "center"}});
                    const r = img.getBoundingClientRect();
                    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return {{src: img.src, natural: [img.naturalWidth, img.naturalHeight],
                             box: [r.left, r.top, r.width, r.height], onTop: hit === img}};
                }})()"""
            )
            png = (out / "plots" / f"{name}.png").read_bytes()
            with Image.open(io.BytesIO(png)) as im:  # the browser decoded it (a broken image is 0 x 0)
                assert img["natural"] == list(im.size), f"{name}: decoded as {img['natural']}, the PNG is {im.size}"
            assert data_uri_bytes(img["src"], f"{name}.png") == png, f"{name}: not the plot of plots/"
            left, top, width, height = img["box"]
            assert width >= 400 and height >= 200 and img["onTop"], f"{name} not visible: {img}"
            shot = b.screenshot(shots / f"plot-{name}.png")
            with Image.open(shot) as im:  # the plot's pixels were painted: a chart, not a blank or broken image
                painted = im.convert("RGB").crop((int(left), int(top), int(left + width), int(top + height)))
                assert len(painted.getcolors(1 << 20) or range(1 << 20)) > 50, f"{name}: almost no colours painted"
            shutil.copy(shot, f"/tmp/report-shot-{name}.png")  # for a human to look at
            # the (i) button shows what was measured and how
            assert (REPO / "captions" / f"{name}.rst").is_file(), f"{name}: no caption in captions/{name}.rst"
            assert read_caption(b, path) == rst_text(name), f"{name}: caption differs from captions/{name}.rst"
            if name == "throughput":
                shutil.copy(b.screenshot(shots / f"caption-{name}.png"), f"/tmp/report-shot-caption-{name}.png")
            b.click(crumb("Plots"))
            b.wait_for("document.querySelectorAll('nav table tbody tr').length > 0")

        # the summary: the eye button shows summary.html in the page, every median of summary.csv readable there
        summary = pd.read_csv(out / "summary.csv")
        tables = ["measurements.csv", "summary.csv", "comparisons.csv", "summary.html", "timeseries.csv"]
        open_category(b, "Tables", [f"results/seed/{f}" for f in tables])
        b.click(f"{ROW.format(path='results/seed/summary.html')}.querySelectorAll('a[type=button]')[0]")
        frame = b.wait_for(
            """(() => {
                const f = [...document.querySelectorAll('#app iframe')]
                    .find(f => f.src.includes(';filename=summary.html;'));
                if (!f) return null;
                const r = f.getBoundingClientRect();
                const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                return {src: f.src, box: [r.left, r.top, r.width, r.height], onTop: hit === f};
            })()"""
        )
        assert data_uri_bytes(frame["src"], "summary.html") == (out / "summary.html").read_bytes()
        assert frame["box"][2] >= 800 and frame["box"][3] >= 400 and frame["onTop"], f"summary not visible: {frame}"
        frame_id = b.wait_for_value(
            lambda: next(
                (f["id"] for f in b.frames() if f.get("parentId") and "filename=summary.html" in f["url"]), None
            )
        )
        shown = b.wait_for_value(
            lambda: b.js_in_frame(
                frame_id,
                """document.readyState === 'complete' && document.querySelectorAll('table').length
                   ? {text: document.body.innerText, tables: document.querySelectorAll('table').length,
                      width: document.querySelector('table').getBoundingClientRect().width}
                   : null""",
            )
        )
        text = " ".join(shown["text"].split())
        assert shown["tables"] >= 4 and shown["width"] > 300, shown["tables"]  # laid out, not raw markup
        assert text.startswith("fsbench campaign 'seed'") and "<td" not in text
        for r in summary.itertuples():  # the medians as a reader sees them, with their CI and n
            assert f"{number(r.median)} MB/s 95% CI {number(r.ci95_low)}–{number(r.ci95_high)} · n=2" in text, r
        assert "Raw" in text and "ext3" in text and "xfs" in text and "3ware-2012" in text
        assert "all alike, fixed (io.repeats is 2)" in text
        shutil.copy(b.screenshot(shots / "summary.png"), "/tmp/report-shot-summary.png")  # for a human to look at
        assert read_caption(b, "results/seed/summary.html") == rst_text("summary_html")
        b.click(crumb("Tables"))

        # the other tables and provenance: listed with their caption, and the download is the file itself
        for category, files in {
            "Tables": {"measurements.csv": "measurements", "summary.csv": "summary", "comparisons.csv": "comparisons"},
            "Provenance": {"provenance.json": "provenance"},
        }.items():
            listed = tables if category == "Tables" else files
            open_category(b, category, [f"results/seed/{f}" for f in listed])
            for filename, caption in files.items():
                path = f"results/seed/{filename}"
                href = b.js(f"{ROW.format(path=path)}.querySelector('a[type=button]').getAttribute('href')")
                assert data_uri_bytes(href, filename) == (out / filename).read_bytes(), f"{filename} differs"
                assert read_caption(b, path) == rst_text(caption), f"{filename}: caption differs"
                b.screenshot(shots / f"{caption}.png")
                b.click(crumb(category))
        assert not b.errors(), f"the page reported errors: {b.errors()}"
        fetched = [url[:80] for url in b.requests() if not url.startswith(("file:", "data:", "about:", "blob:"))]
        assert not fetched, f"the report is not self-contained, it fetched {fetched}"
