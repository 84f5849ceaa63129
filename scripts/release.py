"""Release the array: unmount, detach and delete what the campaign made under its scratch folder."""

from fsbench.storage.devices import release
from fsbench.toolkit.records import write_json
from fsbench.toolkit.run_step import run_step

write_json(snakemake.output[0], {"released": run_step(snakemake.log[0], release, snakemake.params.workdir)})
