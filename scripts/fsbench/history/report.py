"""The trend page: a table of every series first (regressions first), then one small plot per series in a grid,
its lead metric run by run, change points marked and explained, invalid runs drawn hollow with their reason, and
what was left out and why.

One HTML file that stands alone (its plots inside it as PNG data, so the campaign's Snakemake report can show it
too), and the same plots as PNG files in a folder beside it.
"""

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .changes import baselines, lead_metric  # noqa: E402
from .key import DIRECTION, HIGHER  # noqa: E402
from .points import label, left_out_summary, run_label  # noqa: E402

COLOURS = {"regression": "#c0392b", "improvement": "#1e8449", "suspected": "#d68910"}
ORDER = {"regression": 0, "suspected": 1, "improvement": 2, "": 3}  # the table's order: regressions first
UNITS = {"mb_s": "MB/s", "mb_s_durable": "MB/s incl. flush", "lat_p50_us": "median latency, µs", "iops": "per second"}
UNITS |= {"gib_s": "GiB/s", "kiops": "thousands per second"}  # IO500's phases
SPAN = 0.10  # each y axis spans at least ±10 % of its series' median: noise must not look like a trend
STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1400px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1em}
.panel{border:1px solid #ddd;padding:.4em}.panel h3{font-size:90%;margin:.2em 0}.panel ul{font-size:80%;margin:.2em 0}
.regression{color:#c0392b}.improvement{color:#1e8449}.suspected{color:#d68910}
table{border-collapse:collapse;font-size:85%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
img{width:100%}"""


def _plot(line: pd.DataFrame, bad: pd.DataFrame, changes: pd.DataFrame, marks: dict, title: str) -> bytes:
    """One series' lead metric, run by run; `bad`: its invalid runs (hollow, with their reason)."""
    fig, ax = plt.subplots(figsize=(5.2, 2.9))
    every = pd.concat([line.assign(ok=True), bad.assign(ok=False)], ignore_index=True).sort_values("started")
    runs = list(every["run"])
    x = {r: i for i, r in enumerate(runs)}
    med = line["median"].to_numpy()
    xs = [x[r] for r in line["run"]]
    ax.errorbar(
        xs,
        med,
        yerr=[med - line["low"].to_numpy(), line["high"].to_numpy() - med],
        fmt="o-",
        color="#34495e",
        ecolor="#95a5a6",
        capsize=3,
        markersize=4,
        label="run median (bar: lowest to highest repeat)",
    )
    for _, b in bad.iterrows():
        ax.plot([x[b["run"]]], [b["median"]], "o", mfc="none", mec="#7f8c8d", markersize=6)
        ax.annotate(b["reasons"][:24], (x[b["run"]], b["median"]), fontsize=6, color="#7f8c8d", rotation=60)
    if len(bad):
        ax.plot([], [], "o", mfc="none", mec="#7f8c8d", label="not valid (left out)")
    for _, ch in changes.iterrows():
        i = x[ch["after_run"]]
        colour = COLOURS[ch["verdict"]]
        ax.axvline(i - 0.5, color=colour, linewidth=2, linestyle=":" if ch["verdict"] == "suspected" else "-")
        note = f"{ch['verdict']} ×{ch['ratio']:.3g}"
        box = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none"}  # readable over the line it may cross
        ax.text(i - 0.45, 0.97, note, color=colour, va="top", fontsize=7, transform=ax.get_xaxis_transform(), bbox=box)
    for i in baselines(line, marks)[1:-1]:
        ax.axvline(x[line["run"].iloc[i]] - 0.5, color="#7f8c8d", linestyle="--")
        reason = marks.get(line["run"].iloc[i], marks.get(line["campaign"].iloc[i]))
        ax.text(
            x[line["run"].iloc[i]] - 0.45,
            0.03,
            f"marked: {reason}",
            color="#7f8c8d",
            fontsize=6,
            transform=ax.get_xaxis_transform(),
        )
    values = np.r_[line["low"].to_numpy(), line["high"].to_numpy(), bad["median"].to_numpy() if len(bad) else []]
    centre = float(np.median(med)) if len(med) else float(np.median(values))
    lo, hi = min(values.min(), centre * (1 - SPAN)), max(values.max(), centre * (1 + SPAN))
    if lo > 0 and hi / lo > 5:  # a step by a factor: keep both sides readable
        ax.set_yscale("log")
    pad = (hi - lo) * 0.08
    ax.set_ylim(
        lo - pad if ax.get_yscale() == "linear" else lo / 1.2, hi + pad if ax.get_yscale() == "linear" else hi * 1.2
    )
    ax.set_xticks(
        range(len(runs)),
        [run_label(r).replace(" ", "\n", 1) for r in every["run"]],
    )
    ax.tick_params(axis="x", labelsize=5)
    ax.tick_params(axis="y", labelsize=7)
    metric = line["metric"].iloc[0] if len(line) else bad["metric"].iloc[0]
    better = "higher is better" if DIRECTION[metric] == HIGHER else "lower is better"
    ax.set_ylabel(f"{UNITS[metric]}\n({better})", fontsize=7)
    ax.set_title(title, fontsize=8)
    ax.legend(loc="lower left", fontsize=6)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _note(c) -> str:
    """One change point in words: its runs, medians, ratio, p, the other metrics and what changed."""
    p = "" if np.isnan(c["p_value"]) else f", p = {c['p_value']:.2g}"
    others = f" Beside it: {c['others']}." if c["others"] else ""
    return (
        f"<li class='{c['verdict']}'>{html.escape(c['verdict'])} from {html.escape(run_label(c['before_run']))} to "
        f"{html.escape(run_label(c['after_run']))}: median {c['median_before']:.4g} → {c['median_after']:.4g} "
        f"(×{c['ratio']:.3g}{p}).{html.escape(others)} Context changed: "
        f"{html.escape(c['context_changed'] or 'nothing recorded')}</li>"
    )


def _summary(points: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    """The table: per series with more than one valid run, its lead metric's runs, last value, latest change."""
    found = []
    for series, all_metrics in points.groupby("series", sort=False) if len(points) else []:
        first = all_metrics.iloc[0]
        metric = lead_metric(first["workload"], first["op"])
        line = all_metrics[all_metrics["metric"] == metric].sort_values("started")
        if line["run"].nunique() < 2:
            continue
        mine = changes[changes["series"] == series] if len(changes) else changes
        last = mine.iloc[-1] if len(mine) else None
        found.append(
            {
                "series": series,
                "cell": label(line.iloc[-1]),
                "metric": metric,
                "runs": len(line),
                "last": line["median"].iloc[-1],
                "change": f"×{last['ratio']:.3g} at {run_label(last['after_run'])}" if last is not None else "",
                "verdict": last["verdict"] if last is not None else "",
            }
        )
    table = pd.DataFrame(found, columns=["series", "cell", "metric", "runs", "last", "change", "verdict"])
    return table.sort_values("verdict", key=lambda v: v.map(ORDER), kind="stable").reset_index(drop=True)


def page(
    points: pd.DataFrame,
    changes: pd.DataFrame,
    marks: dict,
    out: Path,
    title: str,
    files=True,
    invalid: pd.DataFrame | None = None,
    left_out: pd.DataFrame | None = None,
    untested: pd.DataFrame | None = None,
    family: str = "",
) -> Path:
    """Write `out` (HTML) and, with `files`, its plots as PNG files in the folder OUT-plots beside it; `out`.
    `invalid`: the points of invalid rows (fsbench.history.points.points(rows, invalid=True)); `left_out`: what
    no verdict saw (fsbench.history.points.left_out); `untested`: what the test could not judge yet
    (fsbench.history.changes.untested); `family`: which series the verdicts were judged with."""
    out = Path(out)
    plots = out.parent / f"{out.stem}-plots"
    if files:
        plots.mkdir(parents=True, exist_ok=True)
    invalid = invalid if invalid is not None else pd.DataFrame()
    table = _summary(points, changes)
    rows_html, panels = [], []
    for _, t in table.iterrows():
        series, metric = t["series"], t["metric"]
        line = points[(points["series"] == series) & (points["metric"] == metric)].sort_values("started")
        line = line.reset_index(drop=True)
        bad = invalid[(invalid["series"] == series) & (invalid["metric"] == metric)] if len(invalid) else invalid
        bad = bad[~bad["run"].isin(line["run"])] if len(bad) else pd.DataFrame(columns=["run", "median", "started"])
        mine = changes[changes["series"] == series] if len(changes) else changes
        png = _plot(line, bad, mine, marks, f"{t['cell']} · {metric}")
        if files:
            (plots / f"{series}-{metric}.png").write_bytes(png)
        verdict = html.escape(t["verdict"] or "–")
        rows_html.append(
            f"<tr class='{t['verdict']}'><td><a href='#s-{series}'>{html.escape(t['cell'])}</a></td><td>{metric}</td>"
            f"<td>{t['runs']}</td><td>{t['last']:.4g}</td><td>{html.escape(t['change'])}</td><td>{verdict}</td></tr>"
        )
        notes = "".join(_note(c) for _, c in mine.iterrows())
        notes += "".join(
            f"<li>{html.escape(run_label(b['run']))} not valid ({html.escape(b['reasons'])}): drawn hollow, "
            "left out</li>"
            for _, b in bad.iterrows()
        )
        data = base64.b64encode(png).decode()
        panels.append(
            f"<div class='panel' id='s-{series}' data-series='{series}' data-metric='{metric}' "
            f"data-verdict='{t['verdict']}'><h3>{html.escape(t['cell'])} · {metric}</h3>"
            f"<img alt='{html.escape(t['cell'])} {metric}' src='data:image/png;base64,{data}'>"
            f"<ul>{notes or '<li>no change point</li>'}</ul></div>"
        )
    counts = table["verdict"].value_counts().to_dict()
    head = (
        f"<p>{len(table)} series with more than one valid run; {counts.get('regression', 0)} regression(s), "
        f"{counts.get('suspected', 0)} suspected, {counts.get('improvement', 0)} improvement(s). Each series is "
        "judged on its lead metric (writes: MB/s incl. flush; reads: MB/s; metadata: files per second; "
        f"IO500 phases: their figure, GiB/s or kIOPS){'; ' + html.escape(family) if family else ''}.</p>"
    )
    if not panels:
        head = "<p>The store holds no series with more than one valid run yet: trends show from the second on.</p>"
    gone = left_out if left_out is not None else pd.DataFrame(columns=["series", "cell", "runs", "why"])
    gone_html = ""
    if len(gone):
        summary = "".join(f"<li>{html.escape(s)}</li>" for s in left_out_summary(gone))
        detail = "".join(
            f"<tr><td>{html.escape(str(g['cell']))}</td><td>{html.escape(str(g['runs']))}</td>"
            f"<td>{html.escape(g['why'])}</td></tr>"
            for _, g in gone.iterrows()
        )
        gone_html = (
            f"<h2 id='left-out'>Left out</h2><ul>{summary}</ul><details><summary>per series</summary><table>"
            f"<tr><th>series</th><th>runs</th><th>why</th></tr>{detail}</table></details>"
        )
    short = untested if untested is not None else pd.DataFrame(columns=["series", "cell", "runs", "why"])
    if len(short):
        detail = "".join(
            f"<tr><td>{html.escape(str(g['cell']))}</td><td>{html.escape(g['why'])}</td></tr>"
            for _, g in short.iterrows()
        )
        gone_html += (
            f"<h2 id='not-tested'>Not tested yet</h2><p>{len(short)} series too short to test a step: only one by "
            f"a large factor is suspected.</p><details><summary>per series</summary><table>"
            f"<tr><th>series</th><th>why</th></tr>{detail}</table></details>"
        )
    listing = (
        "<table id='series'><tr><th>series</th><th>metric</th><th>runs</th><th>last</th><th>change</th>"
        f"<th>verdict</th></tr>{''.join(rows_html)}</table>"
        if rows_html
        else ""
    )
    body = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{head}{listing}{gone_html}"
        f"<div class='grid'>{''.join(panels)}</div></body></html>"
    )
    out.write_text(body)
    return out
