"""fsbench: the logic behind the workflow (sizes, config, devices, engines, statistics).

Importable and usable without Snakemake; the step scripts in scripts/ are thin wrappers.
"""
