"""io500.csv: every target's phases, bw, md and the score, from the phase records; and each target's
result_summary.txt and result.txt in io500's formats, and its bar chart (phases.png)."""

from fsbench.io500 import result_files
from fsbench.io500.table import table
from fsbench.plots.io500 import phase_chart
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def write(paths, out, folder):
    records = [read_json(r) for r in paths]
    df = table(records)
    df.to_csv(out, index=False)
    files = result_files.write(records, df, folder)
    for name, part in df.groupby("target", sort=False):  # beside its result files: what the summary shows
        files.append(str(phase_chart(part, str(name), result_files.target_dir(folder, name) / "phases.png")))
    return {"rows": len(df), "files": files}


run_step(snakemake.log[0], write, list(snakemake.input), snakemake.output.csv, snakemake.output.files)
