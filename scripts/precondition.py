"""precondition: write the whole array config `precondition.passes` times before its cells (device, mdadm, loop)."""

from fsbench.measurement.steps import precondition
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_device_step

p = snakemake.params
what = f"precondition of {p.array} on {p.host}"
write_json(
    snakemake.output[0],
    run_device_step(
        snakemake.log[0],
        precondition,
        p.spec,
        p.array_spec,
        read_json(snakemake.input.array),
        p.array,
        p.host,
        p.workdir,
        p.log_interval,
        what=what,
    ),
)
