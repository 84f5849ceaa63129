"""io500.csv from the phase records of every target: one row per phase in IO500's order, then bw, md and the
score; and the IO500 section of summary.md / summary.html (a table per target, and each phase compared
across the targets)."""

import html
import math

import pandas as pd

from fsbench.io500 import phases as ph

COLUMNS = ["target", "phase", "value", "unit", "seconds", "valid", "invalid_reasons"]


def label(record: dict, several: dict) -> str:
    """How a target is named in io500.csv: its target name, with its array and host where the campaign has several."""
    cell = record["cell"]
    parts = [cell[k] for k in ("host", "array") if several[k]] + [cell["target"]]
    return "/".join(parts)


def table(records: list[dict]) -> pd.DataFrame:
    """Rows of io500.csv from every phase record (any order): per target the 12 phases, bw, md and score."""
    several = {k: len({r["cell"][k] for r in records}) > 1 for k in ("host", "array")}
    by_target: dict[str, dict] = {}
    for r in records:
        by_target.setdefault(label(r, several), {})[r["phase"]] = r
    rows = []
    for name, found in by_target.items():
        missing = [p for p in ph.PHASES if p not in found]
        if missing:
            raise ValueError(f"io500 target {name} lacks the records of {', '.join(missing)}")
        figures = {}
        for p in ph.PHASES:
            r = found[p]
            figures[p] = ph.Figure(p, r["value"], r["seconds"], r["valid"], r["invalid_reasons"])
        for f in [figures[p] for p in ph.PHASES] + ph.score(figures):
            rows.append([name, f.phase, f.value, ph.unit(f.phase), f.seconds, f.valid, f.invalid_reasons])
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
    for phase in [*ph.PHASES, "score"]:
        part = df[df["phase"] == phase].set_index("target")["value"]
        best = part.idxmax()
        others = [f"{t} {part[t] / part[best]:.2f}×" for t in names if t != best and part[best] > 0]
        lines.append(f"{phase}: fastest {best} ({_fmt(part[best])}); " + ", ".join(others))
    return lines


def markdown(df: pd.DataFrame) -> str:
    out = ["", "## IO500 phases", ""]
    out.append(
        "Each phase once, every process of every host at once (results/…/io500.csv). valid: whether the IO500 list "
        "would take the figure (its write phases must run at least 300 s under stonewall-time)."
    )
    for name, part in df.groupby("target", sort=False):
        score = part[part["phase"] == "score"].iloc[0]
        out += ["", f"### {name}: score {_fmt(score['value'])}", ""]
        out += ["| phase | value | unit | seconds | valid | why not |", "|---|---|---|---|---|---|"]
        for _, r in part.iterrows():
            why = str(r["invalid_reasons"] or "").replace("|", "/")
            out.append(
                f"| {r['phase']} | {_fmt(r['value'])} | {r['unit']} | {r['seconds']:.3f} | {r['valid']} | {why} |"
            )
    found = verdicts(df)
    if found:
        out += ["", "### IO500 phases compared across targets (one run each: ratios to the fastest)", ""]
        out += [f"- {line}" for line in found]
    return "\n".join(out) + "\n"


def html_section(df: pd.DataFrame) -> str:
    out = ["<h2>IO500 phases</h2>"]
    for name, part in df.groupby("target", sort=False):
        score = part[part["phase"] == "score"].iloc[0]
        out.append(f"<h3>{html.escape(str(name))}: score {_fmt(score['value'])}</h3>")
        out.append(
            "<table><tr><th>phase</th><th>value</th><th>unit</th><th>seconds</th><th>valid</th><th>why not</th></tr>"
        )
        for _, r in part.iterrows():
            cells = [
                r["phase"],
                _fmt(r["value"]),
                r["unit"],
                f"{r['seconds']:.3f}",
                r["valid"],
                r["invalid_reasons"] or "",
            ]
            out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        out.append("</table>")
    found = verdicts(df)
    if found:
        out.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in found) + "</ul>")
    return "\n".join(out) + "\n"
