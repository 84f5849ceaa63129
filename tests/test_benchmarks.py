"""Every `make bench-*` still runs: each benchmark in its smoke mode (SMOKE=1: tiny sizes, one round, the table
printed, no doc written), as its Makefile recipe runs it. Its figures mean nothing at these sizes and are not
checked; that it runs to its table (bench-dag's job formula included) is."""

import os
import subprocess
import sys

import pytest

from conftest import REPO, missing, needs_root, slurm_lock, wait_for_other_slurm


def smoke(name: str, timeout: int) -> str:
    """Run benchmarks/<name>.py with SMOKE=1; its output, after checking it ended well and left docs/ alone."""
    doc = REPO / "docs" / f"bench-{name}.md"
    before = doc.read_bytes() if doc.exists() else None
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{name}.py")],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ | {"SMOKE": "1"},
        cwd=REPO,
    )
    assert proc.returncode == 0, (
        f"bench-{name} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    assert (doc.read_bytes() if doc.exists() else None) == before, f"the smoke run wrote {doc}"
    return proc.stdout


def test_bench_dag_runs_and_its_job_formula_matches_the_dry_runs():
    out = smoke("dag", 600)
    assert "| dry run `snakemake -n`, large | fsbench |" in out and "## What a cell costs" in out


@needs_root
def test_bench_engines_runs():
    out = smoke("engines", 600)
    assert "| randwrite, 4KiB, QD32 (fio io_uring) |" in out


@needs_root
@pytest.mark.e2e
def test_bench_cluster_runs():
    sys.path.insert(0, str(REPO / "tools"))
    import slurm_local

    try:
        slurm_local.install()
    except slurm_local.Unavailable as e:
        missing("slurm", str(e))
    with slurm_lock():  # its local Slurm is the machine's one (the Makefile holds the same lock)
        wait_for_other_slurm(REPO / "no-slurm-here")
        out = smoke("cluster", 1200)
    assert "| 1 | slurm 2 |" in out and "| 2,000 cells |" in out, out[-3000:]
