"""Every `make bench-*` still runs: each benchmark in its smoke mode (SMOKE=1: tiny sizes, one round, the table
printed, no doc written), as its Makefile recipe runs it. Its figures mean nothing at these sizes and are not
checked; that it runs to its table (bench-dag's job formula included) is."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fsbench.storage import devices

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
    zram_before = sorted(Path("/sys/block").glob("zram*"))
    out = smoke("engines", 600)
    assert "| randwrite, 4KiB, QD32 (fio io_uring) |" in out
    woken = out.split("## 4 KiB QD1 beside a process that wakes every 10 ms")[1].split("## The campaign path")[0]
    assert "| randread, 4KiB, QD1 (fio psync) |" in woken and "| randwrite, 4KiB, QD1 (fio psync) |" in woken
    checked = out.split("## io.verify: what checking costs")[1]
    assert "| write, 64KiB, sequential, QD1 |" in checked and "| read, 4KiB, random, QD32 |" in checked
    if Path("/sys/class/zram-control/hot_add").exists():  # the same rows on a zram device of its own, removed after
        on_zram = checked.split("## io.verify on a device that copies on the reading CPU (zram)")[1]
        assert "| read, 1MiB, sequential, QD1 |" in on_zram and "| read, 4KiB, random, QD32 |" in on_zram
        assert sorted(Path("/sys/block").glob("zram*")) == zram_before
    else:
        assert "This kernel has no zram" in checked
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(0.01\\)"], capture_output=True, text=True).stdout
    assert not left, f"bench-engines left its waking process: {left}"


@needs_root
def test_a_killed_bench_engines_releases_its_device():
    """SIGTERM once its loop device is attached (its log says so): it exits through its finally, device detached,
    scratch folder gone. Before exit_on_sigterm it died on the spot and left both."""
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "engines.py")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"SMOKE": "1"},
        cwd=REPO,
    )
    scratch = None
    try:
        for line in proc.stderr:  # "<dev> over <scratch>: written once in full before measuring"
            if " over " in line and "written once" in line:
                scratch = line.split(":")[0].split(" over ")[1]
                break
        else:
            pytest.fail(f"bench-engines ended ({proc.wait()}) before attaching its device")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        left = Path(scratch).exists()
        held = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True).stdout
    finally:
        proc.kill()
        proc.wait()
        if scratch and Path(scratch).exists():  # released here, so that a failure leaves nothing either
            devices.release(Path(scratch))
            shutil.rmtree(scratch, ignore_errors=True)
    assert code == 128 + signal.SIGTERM and not left and scratch not in held, (code, left, held)


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
