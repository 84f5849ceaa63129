"""compare.md and compare.csv: this campaign against the one named by compare_to (fsbench.report.compare_runs)."""

from pathlib import Path

from fsbench.report.compare_runs import run
from fsbench.toolkit.run_step import run_step

here = Path(snakemake.input.measurements).parent
base = Path(snakemake.output.table).with_suffix("")
run_step(snakemake.log[0], run, snakemake.params.earlier, here, base, what="compare")
