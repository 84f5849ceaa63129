"""fsbench: the logic behind the workflow, importable and usable without Snakemake; the step scripts in scripts/
are thin wrappers over it.

Layers, from the bottom up; a subpackage imports only from those below it (tests/test_layers.py checks):

    toolkit      small tools with nothing of fsbench under them: external programs, JSON records, sizes and
                 durations, the latency histogram, a measurement's time series, the validity flags, run_step
    storage      arrays and devices: loop images, mdadm, mkfs, mount, guards, cache, telemetry
    engines      what moves the bytes: the engine table, the job they share, python, fio, dd, mixed, metadata
    campaign     the campaign model: the validated config, its cells, the plan of Snakemake jobs
    cluster      which host a cell belongs to, its folders there, releasing on other nodes
    measurement  a cell measured: the device steps, the job from the cell, identity checks, cold cache, the
                 series judgement, the row and record, all-hosts cells, provenance
    io500        IO500's twelve phases: what each does, their processes on every host, io500.csv and the score
    analysis     records to tables: measurements.csv, statistics, verdicts, validity, baselines, timeseries.csv
    plots        plots/*.png and .svg
    report       summary.md, summary.html, compare.md
    history      the results store across campaigns, change points, the trend page
    workflow     what the rules call besides the above: Slurm resources and groups, the hooks, the analysis
                 digest; and, in snakemake_internals alone, every touch of Snakemake's internals

The package's own modules (__main__: `python -m fsbench`) stand above all of them.
"""

LAYERS = [
    "toolkit",
    "storage",
    "engines",
    "campaign",
    "cluster",
    "measurement",
    "io500",
    "analysis",
    "plots",
    "report",
    "history",
    "workflow",
]
