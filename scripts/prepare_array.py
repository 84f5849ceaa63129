"""prepare_array: make the array (loop images, md) and record what it is."""

from fsbench.measurement.steps import prepare_array
from fsbench.toolkit.records import write_json
from fsbench.toolkit.run_step import run_device_step

p = snakemake.params
what = f"prepare_array of {p.array} on {p.host}"
write_json(
    snakemake.output[0], run_device_step(snakemake.log[0], prepare_array, p.spec, p.array, p.host, p.workdir, what=what)
)
