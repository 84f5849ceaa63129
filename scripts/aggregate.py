"""measurements.csv, timeseries.csv, summary.csv, comparisons.csv, summary.md and summary.html from every
measurement record of the campaign.

summary.csv holds this campaign's rows only; the baselines (baselines.csv, when the config has any)
are summarized the same way and shown in their own section of summary.md and summary.html.
summary.html holds the tables of summary.md as a page of its own: the report shows it inline. Both open with the
verdicts of comparisons.csv (fsbench.analysis.compare).
"""

import pandas as pd

from fsbench.analysis import scaling as scaling_table
from fsbench.analysis.aggregate import measurements, with_stops
from fsbench.analysis.compare import comparisons
from fsbench.analysis.stats import summarize, summarize_baselines
from fsbench.analysis.timeseries_table import timeseries_table
from fsbench.io500 import table as io500_table
from fsbench.report.per_host import hosts_blocks, with_hosts_html, with_hosts_markdown
from fsbench.report.summary import summary_html, summary_markdown
from fsbench.toolkit.run_step import run_step


def io500_sections(files) -> tuple[str, str]:
    """The IO500 section of summary.md and summary.html, where the campaign ran IO500's phases."""
    if not files:
        return "", ""
    df = pd.read_csv(files[0], keep_default_na=False, na_values=[""])
    df[["unit", "invalid_reasons"]] = df[["unit", "invalid_reasons"]].fillna("")
    return io500_table.markdown(df), io500_table.html_section(df)


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
    with open(out.markdown, "w") as f:
        summary_md = summary_markdown(summary, title, earlier_summary, verdicts)
        f.write(with_hosts_markdown(summary_md, per_host) + io500_md + scaling_md)
    html = with_hosts_html(summary_html(summary, title, earlier_summary, verdicts), per_host)
    sections = io500_html + scaling_html
    with open(out.html, "w") as f:
        at_end = "</body>" in html  # the sections go inside the page
        f.write(html.replace("</body>", sections + "</body>") if at_end else html + sections)
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
