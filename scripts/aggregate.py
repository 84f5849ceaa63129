"""measurements.csv, summary.csv and summary.md from every measurement record of the campaign."""

from fsbench.aggregate import measurements
from fsbench.stats import summarize, summary_markdown
from fsbench.steplog import run_step


def aggregate(records, out, campaign):
    df = measurements(records)
    df.to_csv(out.measurements, index=False)
    summary = summarize(df)
    summary.to_csv(out.summary, index=False)
    with open(out.markdown, "w") as f:
        f.write(summary_markdown(summary, f"fsbench campaign '{campaign}'"))
    return {"rows": len(df), "summary_rows": len(summary)}


run_step(snakemake.log[0], aggregate, snakemake.input.records, snakemake.output, snakemake.params.campaign)
