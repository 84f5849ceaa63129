"""io500.csv: every target's twelve phases, bw, md and the score, from the phase records."""

from fsbench.io500.table import table
from fsbench.toolkit.records import read_json
from fsbench.toolkit.run_step import run_step


def write(records, out):
    df = table([read_json(r) for r in records])
    df.to_csv(out, index=False)
    return {"rows": len(df)}


run_step(snakemake.log[0], write, list(snakemake.input), snakemake.output[0])
