"""The documents a reader opens: summary.md and summary.html (summary, rendered by document), the all-hosts
cells' per-host tables in them (per_host), and compare.md, two runs side by side (compare_runs)."""
