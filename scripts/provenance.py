"""provenance.json: the host and tools, and how every array and filesystem was set up."""

from fsbench.analysis.aggregate import record_paths
from fsbench.measurement import provenance
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.run_step import run_step


def collect(paths):
    records = [read_json(p) for p in record_paths(paths)]
    return {
        "campaign": snakemake.params.campaign,
        "host": provenance.host(),  # where the tables were made: with hosts, the submit host
        "machines": provenance.machines(records),  # where each measurement ran
        "arrays": provenance.setups(records),
    }


write_json(snakemake.output[0], run_step(snakemake.log[0], collect, snakemake.input.records))
