"""io500.csv from the phase records of every target: one row per phase in IO500's order, then bw, md and the
score; and the IO500 section of summary.md / summary.html (a table per target, and each phase compared
across the targets)."""

import html
import math

import pandas as pd

from fsbench.io500 import phases as ph

COLUMNS = ["target", "phase", "value", "unit", "seconds", "valid", "invalid_reasons", "doubts"]


def label(record: dict, several: dict) -> str:
    """How a target is named in io500.csv: its target name, with its array and host where the campaign has several."""
    cell = record["cell"]
    parts = [cell[k] for k in ("host", "array") if several[k]] + [cell["target"]]
    return "/".join(parts)


def by_target(records: list[dict]) -> dict[str, dict[str, dict]]:
    """The phase records per target as io500.csv names it (`label`): {target: {phase: record}}."""
    several = {k: len({r["cell"][k] for r in records}) > 1 for k in ("host", "array")}
    found: dict[str, dict] = {}
    for r in records:
        found.setdefault(label(r, several), {})[r["phase"]] = r
    return found


def table(records: list[dict]) -> pd.DataFrame:
    """Rows of io500.csv from every phase record (any order): per target its phases in io500's order, then bw,
    md and score (and scorex in extended mode). valid and invalid_reasons: io500's [INVALID] and its words;
    doubts: fsbench's own about the figure."""
    rows = []
    for name, found in by_target(records).items():
        cell = next(iter(found.values()))["cell"]
        mode = (cell.get("io500") or {}).get("mode", "standard")
        missing = [p for p in ph.measured(mode, cell.get("method", 1)) if p not in found]
        if missing:
            raise ValueError(f"io500 target {name} lacks the records of {', '.join(missing)}")
        figures = {}
        for p in [p for p in ph.order(mode) if p in found]:
            r = found[p]
            figures[p] = ph.Figure(p, r["value"], r["seconds"], r["valid"], r["invalid_reasons"])
        scores = ph.score(figures) + (ph.score(figures, extended=True)[2:] if mode == "extended" else [])
        for f in list(figures.values()) + scores:
            doubts = found[f.phase].get("doubts", "") if f.phase in found else ""
            rows.append([name, f.phase, f.value, ph.unit(f.phase), f.seconds, f.valid, f.invalid_reasons, doubts])
    return pd.DataFrame(rows, columns=COLUMNS)


def _fmt(v) -> str:
    return "n/a" if not isinstance(v, float) or math.isnan(v) else f"{v:.4g}"


def verdicts(df: pd.DataFrame) -> list[str]:
    """Each phase across the targets (where there are several): every target against the fastest. One run each:
    a ratio, not a tested difference."""
    names = list(dict.fromkeys(df["target"]))
    if len(names) < 2:
        return []
    lines = []
    for phase in [p for p in dict.fromkeys(df["phase"]) if p in ph.BY_NAME and ph.BY_NAME[p].group] + ["score"]:
        part = df[df["phase"] == phase].set_index("target")["value"]
        best = part.idxmax()
        others = [f"{t} {part[t] / part[best]:.2f}×" for t in names if t != best and part[best] > 0]
        lines.append(f"{phase}: fastest {best} ({_fmt(part[best])}); " + ", ".join(others))
    return lines


HEAD = ["phase", "value", "unit", "seconds", "valid", "io500's reason", "fsbench's doubts"]
ABOUT = (
    "Each phase once, in io500's order and units, every process of every host at once (results/…/io500.csv, and "
    "io500's result_summary.txt per target). valid: no [INVALID] where the io500 application would print one, "
    "with its reason (a list submission's write phases run at least 300 s); doubts: fsbench's own about the "
    "figure. Phases without a score group (timestamp, ior-rnd4K-easy-read) are not in bw, md or score."
)


def _cells(r) -> list[str]:
    return [r["phase"], _fmt(r["value"]), r["unit"], f"{r['seconds']:.3f}", str(r["valid"]),
            str(r["invalid_reasons"] or ""), str(r.get("doubts", "") or "")]  # fmt: skip


def _score_row(part: pd.DataFrame) -> pd.Series:
    return part[part["phase"] == "score"].iloc[0]


def markdown(df: pd.DataFrame) -> str:
    out = ["", "## IO500 phases", "", ABOUT]
    for name, part in df.groupby("target", sort=False):
        out += ["", f"### {name}: score {_fmt(_score_row(part)['value'])}", ""]
        out += ["| " + " | ".join(HEAD) + " |", "|" + ":---|" * len(HEAD)]
        for _, r in part.iterrows():
            out.append("| " + " | ".join(c.replace("|", "/") for c in _cells(r)) + " |")
    found = verdicts(df)
    if found:
        out += ["", "### IO500 phases compared across targets (one run each: ratios to the fastest)", ""]
        out += [f"- {line}" for line in found]
    return "\n".join(out) + "\n"


def html_section(df: pd.DataFrame, charts: dict | None = None) -> str:
    """The IO500 section of summary.html: per target its table, left-aligned (and its bar chart, `charts`:
    target -> image path relative to the page)."""
    out = ["<h2>IO500 phases</h2>", f"<p>{html.escape(ABOUT)}</p>"]
    left = ' style="text-align:left"'
    for name, part in df.groupby("target", sort=False):
        out.append(f"<h3>{html.escape(str(name))}: score {_fmt(_score_row(part)['value'])}</h3>")
        if charts and name in charts:
            out.append(f'<img src="{html.escape(charts[name])}" alt="io500 phases of {html.escape(str(name))}">')
        out.append(
            f'<table class="io500"{left}><tr>' + "".join(f"<th{left}>{html.escape(h)}</th>" for h in HEAD) + "</tr>"
        )
        for _, r in part.iterrows():
            out.append("<tr>" + "".join(f"<td{left}>{html.escape(c)}</td>" for c in _cells(r)) + "</tr>")
        out.append("</table>")
    found = verdicts(df)
    if found:
        out.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in found) + "</ul>")
    return "\n".join(out) + "\n"
