"""The campaign model: the validated campaign file (config), its cells (cells), the plan of Snakemake jobs
(plan), and docs/config.md generated from the schema (reference)."""
