"""Release the array: unmount, detach and delete what the campaign made under its scratch folder."""

from fsbench.records import write_json
from fsbench.step_report import run_step
from fsbench.storage.devices import release

write_json(snakemake.output[0], {"released": run_step(snakemake.log[0], release, snakemake.params.workdir)})
