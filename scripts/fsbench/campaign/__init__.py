"""The campaign model: the validated campaign file, its cells, sizes, and the plan of Snakemake jobs."""
