"""io500.csv: every target's phases, bw, md and the score, from the phase records; and each target's
result_summary.txt and result.txt in io500's formats."""

from fsbench.io500 import result_files
from fsbench.io500.table import table
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def write(paths, out, folder):
    records = [read_json(r) for r in paths]
    df = table(records)
    df.to_csv(out, index=False)
    return {"rows": len(df), "files": result_files.write(records, df, folder)}


run_step(snakemake.log[0], write, list(snakemake.input), snakemake.output.csv, snakemake.output.files)
