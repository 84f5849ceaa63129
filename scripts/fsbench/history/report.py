"""The trend page: a panel per series that has more than one run, its change points marked and explained.

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
import pandas as pd  # noqa: E402

from .changes import baselines  # noqa: E402
from .key import DIRECTION, HIGHER  # noqa: E402
from .points import label  # noqa: E402

COLOURS = {"regression": "#c0392b", "improvement": "#1e8449", "suspected": "#d68910"}
UNITS = {"mb_s": "MB/s", "mb_s_durable": "MB/s incl. flush", "lat_p50_us": "median latency, µs", "iops": "per second"}
STYLE = """body{font-family:sans-serif;margin:1.5em;max-width:1300px}
.panel{margin:1.5em 0;padding-top:.5em;border-top:1px solid #ccc}
.regression{color:#c0392b}.improvement{color:#1e8449}.suspected{color:#d68910}
table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
img{max-width:100%}"""


def _plot(line: pd.DataFrame, changes: pd.DataFrame, marks: dict, title: str) -> bytes:
    fig, ax = plt.subplots(figsize=(10, 3.6))
    x = list(range(len(line)))
    med = line["median"].to_numpy()
    ax.errorbar(
        x,
        med,
        yerr=[med - line["low"].to_numpy(), line["high"].to_numpy() - med],
        fmt="o-",
        color="#34495e",
        ecolor="#95a5a6",
        capsize=4,
        label="median of the run's repeats (bar: lowest to highest)",
    )
    runs = list(line["run"])
    for _, ch in changes.iterrows():
        i = runs.index(ch["after_run"])
        colour = COLOURS[ch["verdict"]]
        ax.axvline(i - 0.5, color=colour, linewidth=2)
        changed = ch["context_changed"] or "no context change recorded"
        changed = changed if len(changed) <= 60 else changed[:57] + "…"
        note = f"{ch['verdict']} ×{ch['ratio']:.3g}\n{changed}"
        box = {"facecolor": "white", "alpha": 0.8, "edgecolor": "none"}  # readable over the line it may cross
        ax.text(i - 0.45, 0.97, note, color=colour, va="top", fontsize=8, transform=ax.get_xaxis_transform(), bbox=box)
    for i in baselines(line, marks)[1:-1]:
        reason = marks.get(line["run"].iloc[i], marks.get(line["campaign"].iloc[i]))
        ax.axvline(i - 0.5, color="#7f8c8d", linestyle="--")
        note = f"marked: {reason}"
        ax.text(i - 0.45, 0.03, note, color="#7f8c8d", fontsize=8, transform=ax.get_xaxis_transform())
    if med.min() > 0 and line["high"].max() / line["low"].min() > 5:  # a step by a factor: keep both sides readable
        ax.set_yscale("log")
    ax.set_xticks(
        x, [f"{c}\n{str(s)[:16].replace('T', ' ')}" for c, s in zip(line["campaign"], line["started"], strict=True)]
    )
    ax.tick_params(axis="x", labelsize=7)
    metric = line["metric"].iloc[0]
    better = "higher is better" if DIRECTION[metric] == HIGHER else "lower is better"
    ax.set_ylabel(f"{UNITS[metric]} ({better})")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def page(points: pd.DataFrame, changes: pd.DataFrame, marks: dict, out: Path, title: str, files=True) -> Path:
    """Write `out` (HTML) and, with `files`, its plots as PNG files in the folder OUT-plots beside it; `out`."""
    out = Path(out)
    plots = out.parent / f"{out.stem}-plots"
    if files:
        plots.mkdir(parents=True, exist_ok=True)
    panels = []
    groups = points.groupby(["series", "metric"], sort=False) if len(points) else []
    for (series, metric), line in groups:
        if len(line) < 2:
            continue
        line = line.sort_values("started").reset_index(drop=True)
        name = label(line.iloc[-1])
        mine = changes[(changes["series"] == series) & (changes["metric"] == metric)] if len(changes) else changes
        png = _plot(line, mine, marks, f"{name} · {metric}")
        if files:
            (plots / f"{series}-{metric}.png").write_bytes(png)
        notes = "".join(
            f"<li class='{c['verdict']}'>{html.escape(c['verdict'])} from {html.escape(c['before_run'])} to "
            f"{html.escape(c['after_run'])}: median {c['median_before']:.4g} → {c['median_after']:.4g} "
            f"(×{c['ratio']:.3g}, p = {c['p_value']:.2g}); context changed: "
            f"{html.escape(c['context_changed'] or 'nothing recorded')}</li>"
            for _, c in mine.iterrows()
        )
        data = base64.b64encode(png).decode()
        panels.append(
            f"<div class='panel' data-series='{series}' data-metric='{metric}'>"
            f"<h3>{html.escape(name)} · {metric}</h3>"
            f"<img alt='{html.escape(name)} {metric}' src='data:image/png;base64,{data}'>"
            f"<ul>{notes or '<li>no change point</li>'}</ul></div>"
        )
    counts = changes["verdict"].value_counts().to_dict() if len(changes) else {}
    head = (
        f"<p>{len(panels)} series with more than one run; {counts.get('regression', 0)} regression(s), "
        f"{counts.get('improvement', 0)} improvement(s).</p>"
    )
    if not panels:
        head = "<p>The store holds no series with more than one run yet: trends show from the second run on.</p>"
    body = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{head}{''.join(panels)}</body></html>"
    )
    out.write_text(body)
    return out
