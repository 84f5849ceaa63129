"""measurements.csv, timeseries.csv, summary.csv, comparisons.csv, summary.md and summary.html from every
measurement record of the campaign.

summary.csv holds this campaign's rows only; the baselines (baselines.csv, when the config has any)
are summarized the same way and shown in their own section of summary.md and summary.html.
summary.html holds the tables of summary.md as a page of its own: the report shows it inline. Both open with the
verdicts of comparisons.csv (fsbench.analysis.compare).
"""

from pathlib import Path

import pandas as pd

from fsbench.analysis import scaling as scaling_table
from fsbench.analysis.aggregate import measurements, with_stops
from fsbench.analysis.compare import comparisons
from fsbench.analysis.stats import summarize, summarize_baselines
from fsbench.analysis.timeseries_table import timeseries_table
from fsbench.io500 import table as io500_table
from fsbench.io500.result_files import target_dir
from fsbench.report.per_host import hosts_blocks, with_hosts_html, with_hosts_markdown
from fsbench.report.summary import summary_html, summary_markdown
from fsbench.toolkit.run_step import run_step


def io500_sections(files) -> tuple[str, str]:
    """The IO500 section of summary.md and summary.html, where the campaign ran IO500's phases."""
    if not files:
        return "", ""
    df = pd.read_csv(files[0], keep_default_na=False, na_values=[""])
    text = [c for c in ("unit", "invalid_reasons", "doubts") if c in df]  # doubts: since io500 method 5
    df[text] = df[text].fillna("")
    folder = Path(files[0]).parent / "io500"  # each target's phases.png (rule io500_table), beside the page
    charts = {t: f"io500/{target_dir(folder, t).name}/phases.png" for t in df["target"].unique()}
    charts = {t: c for t, c in charts.items() if (Path(files[0]).parent / c).exists()}
    return io500_table.markdown(df), io500_table.html_section(df, charts)


def scaling_sections(files) -> tuple[str, str]:
    """The client-scaling section of summary.md and summary.html, where the campaign has config clients."""
    if not files:
        return "", ""
    df = pd.read_csv(files[0])
    return scaling_table.markdown(df), scaling_table.html_section(df)


def aggregate(records, baselines, out, campaign, io500=(), scaling=()):
    df = measurements(records)
    df.to_csv(out.measurements, index=False)
    series = timeseries_table(records)
    series.to_csv(out.timeseries, index=False)
    summary = with_stops(summarize(df), records, df)
    summary.to_csv(out.summary, index=False)
    verdicts = comparisons(df)
    verdicts.to_csv(out.comparisons, index=False)
    earlier = pd.concat([pd.read_csv(p) for p in baselines], ignore_index=True) if baselines else None
    earlier_summary = summarize_baselines(earlier) if earlier is not None else None
    title = f"fsbench campaign '{campaign}'"
    per_host = hosts_blocks(records)  # all-hosts cells: each host's first-done, last-done and the stonewall
    io500_md, io500_html = io500_sections(io500)
    scaling_md, scaling_html = scaling_sections(scaling)
    # an io500 campaign's summary leads with its IO500 table, right under the title; the scaling study at the end
    markdown = with_hosts_markdown(summary_markdown(summary, title, earlier_summary, verdicts), per_host)
    head, _, rest = markdown.partition("\n")
    with open(out.markdown, "w") as f:
        f.write((f"{head}\n{io500_md}\n{rest}" if io500_md else markdown) + scaling_md)
    html = with_hosts_html(summary_html(summary, title, earlier_summary, verdicts), per_host)
    with open(out.html, "w") as f:
        html = html.replace("</h1>", "</h1>\n" + io500_html, 1) if "</h1>" in html else io500_html + html
        at_end = "</body>" in html  # the scaling section goes inside the page, at its end
        f.write(html.replace("</body>", scaling_html + "</body>") if at_end else html + scaling_html)
    return {
        "rows": len(df),
        "timeseries_rows": len(series),
        "summary_rows": len(summary),
        "comparisons": len(verdicts),
        "baseline_rows": 0 if earlier is None else len(earlier),
    }


run_step(
    snakemake.log[0],
    aggregate,
    snakemake.input.records,
    list(snakemake.input.baselines),
    snakemake.output,
    snakemake.params.campaign,
    list(snakemake.input.io500),
    list(snakemake.input.scaling),
)
