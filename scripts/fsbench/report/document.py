"""The summary's document model: headings, paragraphs and tables of rates and verdicts, rendered as Markdown
(summary.md) and as one self-contained HTML page (summary.html)."""

import html
from dataclasses import dataclass, field

import pandas as pd

from fsbench.toolkit.flags import INVALIDATING, MEANING
from fsbench.toolkit.flags import name as flag_name


def number(value) -> str:
    """Few enough digits to read at a glance, as many as small rates need."""
    if pd.isna(value):
        return "–"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


# The summary as blocks, rendered once as Markdown (summary.md) and once as HTML (summary.html).
@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str


@dataclass
class Rate:
    """A cell of the main table: the median with its CI and n (or why it has no CI), the cell's flags, and how it
    stopped repeating (only where cells stopped for different reasons)."""

    median: float
    low: float
    high: float
    n: int
    flags: list[str] = field(default_factory=list)
    stopped: str = ""
    no_ci: str = ""  # why there is no CI: summary.csv's ci95_note
    unit: str = "MB/s"  # or files/s (the metadata test)
    # the invalidating flags (fsbench.toolkit.flags): not a valid figure
    invalid: list[str] = field(default_factory=list)

    def ci(self) -> str:
        return f"[{number(self.low)}–{number(self.high)}]" if pd.notna(self.low) else ""

    def text(self) -> str:
        if pd.isna(self.median):
            return "–"
        out = " ".join(filter(None, [f"{number(self.median)} {self.unit}", self.ci(), f"n={self.n}"]))
        if self.invalid:
            out = f"not valid ({', '.join(self.invalid)}): {out}"
        if self.no_ci and not self.ci():
            out += f", {self.no_ci}"
        if self.flags:
            out += ", flagged " + ", ".join(self.flags)
        return out + (f", stopped: {self.stopped}" if self.stopped else "")


@dataclass
class Table:
    header: list[str]
    rows: list[list]  # the first cell names the row; the others are text or a Rate
    prose: bool = False  # cells of words (left-aligned), not figures


@dataclass
class Verdict:
    """A verdict cell: faster, slower (coloured in HTML), no clear difference, or not comparable (greyed) and why."""

    text: str
    why: str = ""

    def said(self) -> str:
        return f"{self.text}: {self.why}" if self.why else self.text


def _md_table(table: Table) -> list[str]:
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    rows = [
        [c.text() if isinstance(c, Rate) else c.said() if isinstance(c, Verdict) else c for c in row]
        for row in table.rows
    ]
    bar = "|" + "|".join([" --- "] + [" --- " if table.prose else " ---: "] * (len(table.header) - 1)) + "|"
    return [line(table.header), bar, *map(line, rows)]


def blocks_markdown(blocks: list) -> str:
    """Headings, paragraphs and tables as Markdown."""
    lines = []
    for block in blocks:
        if isinstance(block, Heading):
            lines.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            lines.append(block.text)
        else:
            lines += _md_table(block)
        lines.append("")
    return "\n".join(lines)


CSS = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #1f2328; margin: 1.2rem 1.5rem 3rem; max-width: 110rem; }
h1 { font-size: 1.45rem; margin: 0 0 .6rem; }
h2 { font-size: 1.2rem; margin: 1.8rem 0 .5rem; padding-bottom: .2rem; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p { margin: .45rem 0; max-width: 75rem; }
p.note { color: #57606a; font-size: .9rem; }
code { font: .88em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f4f6;
       padding: 0 .25em; border-radius: 3px; }
.scroll { overflow-x: auto; margin: .5rem 0 .9rem; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .35rem .65rem; vertical-align: top; }
thead th { background: #f6f8fa; text-align: right; white-space: nowrap; }
thead th:first-child, tbody th { text-align: left; }
tbody th { font-weight: 600; white-space: nowrap; background: #fbfbfc; }
td { text-align: right; }
tbody tr:hover td, tbody tr:hover th { background: #f3f8ff; }
.median { font-weight: 700; font-size: 1.05rem; }
.unit { color: #57606a; font-size: .85rem; }
.ci { display: block; color: #57606a; font-size: .82rem; white-space: nowrap; }
.flag { display: inline-block; margin: .2rem 0 0 .25rem; padding: 0 .4em; border-radius: .6em; font-size: .75rem;
        background: #fff1d6; color: #7a4b00; border: 1px solid #f0c36d; white-space: nowrap; }
.stop { display: block; color: #0b5394; font-size: .78rem; white-space: nowrap; }
td.reason { text-align: left; font-size: .85rem; max-width: 28rem; }
td.verdict { text-align: left; font-weight: 600; white-space: nowrap; }
td.faster { color: #116329; }
td.slower { color: #a40e26; }
/* Not a valid figure (fsbench.analysis.validity): hatched and grey, never coloured as a verdict. */
td.invalid { background: repeating-linear-gradient(135deg, #f4f4f4 0 6px, #e6e6e6 6px 8px); color: #6e7781; }
td.invalid .median { font-weight: 400; text-decoration: line-through; text-decoration-color: #8c959f; }
.invalid-mark { display: block; font-size: .78rem; font-weight: 700; color: #57606a; white-space: nowrap; }
.flag.invalidating { background: #eaeef2; color: #424a53; border-color: #8c959f; }
td.verdict.not-comparable { color: #6e7781; font-weight: 400; white-space: normal; }
"""


def _inline(text: str) -> str:
    """Text as HTML, `code` as <code>."""
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(text.split("`")))


def _html_cell(cell, prose: bool) -> str:
    if isinstance(cell, Rate):
        if pd.isna(cell.median):
            return "<td>–</td>"
        ci = (
            f"95% CI {html.escape(cell.ci()[1:-1])} · n={cell.n}"
            if cell.ci()
            else f"n={cell.n}, {html.escape(cell.no_ci or 'no CI')}"
        )
        flags = "".join(
            f'<span class="flag{" invalidating" if flag_name(f) in INVALIDATING else ""}" '
            f'title="{html.escape(MEANING.get(flag_name(f), ""))}">{html.escape(f)}</span>'
            for f in cell.flags
        )
        stop = f'<span class="stop">stopped: {html.escape(cell.stopped)}</span>' if cell.stopped else ""
        mark = '<span class="invalid-mark">not valid</span>' if cell.invalid else ""
        cls = ' class="invalid"' if cell.invalid else ""
        return (
            f"<td{cls}>{mark}"
            f'<span class="median">{number(cell.median)}</span> <span class="unit">{html.escape(cell.unit)}</span>'
            f'<span class="ci">{ci}</span>{flags}{stop}</td>'
        )
    if isinstance(cell, Verdict):
        kind = {"faster": " faster", "slower": " slower", "not comparable": " not-comparable"}.get(cell.text, "")
        return f'<td class="verdict{kind}">{html.escape(cell.said())}</td>'
    return f'<td class="reason">{html.escape(str(cell))}</td>' if prose else f"<td>{html.escape(str(cell))}</td>"


def _html_table(table: Table) -> list[str]:
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in table.header)
    body = [
        f'<tr><th scope="row">{html.escape(str(row[0]))}</th>'
        + "".join(_html_cell(c, table.prose) for c in row[1:])
        + "</tr>"
        for row in table.rows
    ]
    return [
        '<div class="scroll"><table>',
        f"<thead><tr>{head}</tr></thead>",
        "<tbody>",
        *body,
        "</tbody></table></div>",
    ]


def blocks_html(blocks: list, title: str, note: str = "") -> str:
    """Headings, paragraphs and tables as one self-contained HTML page, `note` at its foot."""
    body = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_inline(block.text)}</p>")
        else:
            body += _html_table(block)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{CSS}</style></head>",
            "<body>",
            *body,
            *([f'<p class="note">{_inline(note)}</p>'] if note else []),
            "</body></html>",
            "",
        ]
    )
