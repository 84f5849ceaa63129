# fsbench: `make bench` runs the default campaign, `make test` the whole test suite.
# Both first set up what is missing (system tools as root via apt-get, and .venv/).
SNAKEMAKE := .venv/bin/snakemake
CORES ?= 2

.PHONY: setup bench test lint release clean

setup:
	@tools/setup.sh

bench: setup
	$(SNAKEMAKE) --cores $(CORES)
	@echo "results: results/$$(.venv/bin/python -c 'import yaml; print(yaml.safe_load(open("config/config.yaml")).get("campaign", "default"))')/"

test: setup
	.venv/bin/pytest -q tests

lint: setup
	.venv/bin/ruff check scripts tests
	.venv/bin/ruff format --check scripts tests
	.venv/bin/snakefmt --check Snakefile rules
	$(SNAKEMAKE) --lint --cores 1

# Unmount, detach and delete everything the default campaign holds under its scratch folder.
release: setup
	.venv/bin/python -c 'import sys; sys.path.insert(0, "scripts"); import yaml; from fsbench.devices import release; \
	c = yaml.safe_load(open("config/config.yaml")); print("\n".join(release(f"{c[\"scratch\"]}/{c[\"campaign\"]}")) or "nothing to release")'
