# fsbench: `make bench` runs the default campaign, `make test` the whole test suite.
# Both first set up what is missing (system tools as root via apt-get, and .venv/).
SNAKEMAKE := .venv/bin/snakemake
CORES ?= 2
CAMPAIGN ?= config/config.yaml

.PHONY: setup bench test lint release report bench-engines bench-dag bench-cluster bench-history bench-peers

setup:
	@tools/setup.sh

bench: setup
	$(SNAKEMAKE) --cores $(CORES)
	$(MAKE) --no-print-directory report

# The Snakemake HTML report of a finished campaign (CAMPAIGN=file.yaml, default config/config.yaml).
report: setup
	$(SNAKEMAKE) --cores 1 --configfile $(CAMPAIGN) --report $$(.venv/bin/fsbench results $(CAMPAIGN))/report.html

test: setup
	.venv/bin/pytest -q -rfEs -n 2 --dist loadgroup --durations=15 tests

lint: setup
	.venv/bin/ruff check scripts tests benchmarks tools
	.venv/bin/ruff format --check scripts tests benchmarks tools
	.venv/bin/snakefmt --check Snakefile rules
	$(SNAKEMAKE) --lint --cores 1

# Unmount, detach and delete everything a campaign holds under its scratch folder (CAMPAIGN=file.yaml).
release: setup
	.venv/bin/fsbench release $(CAMPAIGN)

# Each bench-* below has a smoke mode, `make bench-X SMOKE=1`: tiny sizes, one round, the table printed and no doc
# written; tests/test_benchmarks.py runs them so that a benchmark that no longer runs fails CI.

# fsbench's python engine against fio's own reported figures (bw, IOPS at QD1 and QD32), paired in 5 rounds on a
# RAM-backed loop device (2 GiB in /dev/shm, root), with the CPU each spends; called directly, and through a
# campaign's write and read steps (each in a process of its own); io.verify's cost there and on a zram device of
# its own, where the kernel has zram (~14 min); prints the tables and keeps them in docs/bench-engines.md.
# SMOKE=1 make bench-engines: once, tiny, nothing kept.
bench-engines: setup
	.venv/bin/python benchmarks/engines.py

# Planning cost per job: snakemake -n on ~2,000 cells (~7,200 jobs) and a no-op run of a finished ~400-job
# campaign, each beside a bare one-rule workflow with as many jobs, side by side in 3 rounds (no device is
# touched, ~10 min); prints a table and keeps it in docs/bench-dag.md.
bench-dag: setup
	.venv/bin/python benchmarks/dag.py

# history's change points on synthetic stores (seeds used for nothing before issue 40's final table): false alarms
# in 1,000 stores of 50 flat series, 10 % steps at random runs and 3x steps found (~16 min on a loaded 2-core VM,
# no device); prints a table and its reading (written from the table), keeps them in docs/bench-history.md above
# the doc's dated notes measured by hand, exits 1 when a target is missed. SMOKE=1: 3 stores a row, targets not checked.
bench-history: setup
	.venv/bin/python benchmarks/history.py

# The issue-22 campaign (raw + ext4 + xfs, 1 MiB, 2 repeats, 128 MiB) locally and through a real local Slurm
# (tools/slurm_local.py: one node, then two), side by side in ROUNDS rounds (default 2): wall time, Slurm jobs,
# seconds measuring, ratio to local; and the Snakemake start inside a group job for 10 and 2,000 cells (root,
# ~20 min). One local Slurm at a time on a machine: it waits for /tmp/fsbench-slurm.lock. Prints the table and
# keeps it in docs/bench-cluster.md.
bench-cluster: setup
	flock /tmp/fsbench-slurm.lock .venv/bin/python benchmarks/cluster.py

# fsbench against IOR and mdtest (built out of tree from ../shared/peers by tools/peers.py) with the same parameters
# on the same storage: a RAM-backed ext4 and the test cluster's GlusterFS volume (which takes
# /tmp/fsbench-slurm.lock while it runs); paired rounds. Also the io500 application (built from io500-02091cf.tar.gz)
# against fsbench's whole io500 campaign, IO500_APP_ROUNDS rounds (default 5). Keeps the table and its findings
# (written from the table) in docs/bench-peers.md, above the doc's dated notes measured by hand, which it keeps as
# they are; exits 1 on a miss the peer's own range does not explain. SMOKE=1: tiny sizes, one round, ext4 only,
# nothing written, exit 0.
bench-peers: setup
	.venv/bin/python benchmarks/peers.py
