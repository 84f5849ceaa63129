"""measurements.csv, summary.csv and summary.md from every measurement record of the campaign.

summary.csv holds this campaign's rows only; the baselines (baselines.csv, when the config has any)
are summarized the same way and shown in their own section of summary.md.
"""

import pandas as pd

from fsbench.aggregate import measurements, with_stops
from fsbench.stats import summarize, summarize_baselines, summary_markdown
from fsbench.steplog import run_step


def aggregate(records, baselines, out, campaign):
    df = measurements(records)
    df.to_csv(out.measurements, index=False)
    summary = with_stops(summarize(df), records, df)
    summary.to_csv(out.summary, index=False)
    earlier = pd.concat([pd.read_csv(p) for p in baselines], ignore_index=True) if baselines else None
    earlier_summary = summarize_baselines(earlier) if earlier is not None else None
    with open(out.markdown, "w") as f:
        f.write(summary_markdown(summary, f"fsbench campaign '{campaign}'", earlier_summary))
    return {
        "rows": len(df),
        "summary_rows": len(summary),
        "baseline_rows": 0 if earlier is None else len(earlier),
    }


run_step(
    snakemake.log[0],
    aggregate,
    snakemake.input.records,
    list(snakemake.input.baselines),
    snakemake.output,
    snakemake.params.campaign,
)
