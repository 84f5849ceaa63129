"""The workflow's Python: what the rules call that is not a measurement (Slurm resources and groups, the hooks,
the analysis digest), and, in snakemake_internals.py alone, every touch of Snakemake's internals."""
