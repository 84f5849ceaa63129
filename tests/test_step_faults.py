"""Each device step fails cleanly on its own: a fault injected at mkfs, at mount, under a write (the device
vanishes) and before a read (the data is not what its write made) ends the run with one line naming the step,
the cell and the cause; nothing stays attached or mounted, no state is left for the next run to trust, and
the same command then completes the campaign.

mkfs and mount fail through a tool of the same name first on PATH that fails while a marker file exists and
otherwise runs the real one; the device vanishes for real (its image truncated, the loop device resized to
nothing) while the tests' throttle (conftest.slow_device) holds the write under way.
"""

import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import (
    REPO,
    SNAKEMAKE,
    held,
    needs_root,
    needs_throttle,
    private_scratch,
    run_campaign,
    slow_device,
    small_campaign,
)

pytestmark = [needs_root, pytest.mark.e2e]

MiB = 2**20
CELL = "demo/ext4/seq-1MiB-buffered-1s rep 1"


def shim(bindir: Path, tool: str, marker: Path, fault: str) -> None:
    """`tool` first on PATH: while `marker` exists it runs `fault` (shell; REAL is the real tool), else the real
    tool."""
    real = shutil.which(tool)
    bindir.mkdir(exist_ok=True)
    script = bindir / tool
    script.write_text(f'#!/bin/sh\nREAL={real}\nif [ -e "{marker}" ]; then\n{fault}\nfi\nexec "$REAL" "$@"\n')
    script.chmod(0o755)


def path_env(bindir: Path) -> dict:
    return {"PATH": f"{bindir}:{os.environ['PATH']}"}


def assert_clean_failure(proc, scratch, work, name, said_by_step: str) -> None:
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"fsbench: {said_by_step}" in said, said[-3000:]
    assert not held(scratch)
    assert not list((work / "results" / name / "state").glob("**/*.ready"))  # no state for the next run to trust


def assert_complete(work, name) -> pd.DataFrame:
    df = pd.read_csv(work / "results" / name / "measurements.csv")
    assert sorted(df.op) == ["read", "write"] and (df.bytes == df.bytes.max()).all()
    return df


@contextmanager
def injected_fault(scratch, tmp_path, tool: str, code: int, step: str, name: str):
    """`tool` fails (a PATH shim): the campaign stops with a message naming `step`, the cell and the tool's words,
    holding nothing; the body checks what is left; then, the fault gone, the next run completes."""
    marker, bindir = tmp_path / f"fail-{tool}", tmp_path / "bin"
    shim(bindir, tool, marker, f'echo "{tool}: injected fault" >&2; exit {code}')
    marker.touch()
    config = small_campaign(scratch, name)
    proc = run_campaign(tmp_path, config, check=False, env=path_env(bindir))
    assert_clean_failure(proc, scratch, tmp_path, name, f"{step} of {CELL}: ")
    assert f"{tool}: injected fault" in proc.stderr
    yield tmp_path / "results" / name
    marker.unlink()
    run_campaign(tmp_path, config, env=path_env(bindir))
    assert_complete(tmp_path, name)
    assert not held(scratch)


def test_mkfs_fails(scratch, tmp_path):
    with injected_fault(scratch, tmp_path, "mkfs.ext4", 1, "mkfs", "mkfs-fault") as results:
        assert not (results / "runs/local/demo/ext4").exists()


def test_mount_fails(scratch, tmp_path):
    with injected_fault(scratch, tmp_path, "mount", 32, "mount", "mount-fault") as results:
        rep = results / "runs/local/demo/ext4/seq-1MiB-buffered-1s/rep1"
        assert (rep / "mkfs.json").exists() and not (rep / "mount.json").exists()


def test_the_read_refuses_data_its_write_did_not_make(scratch, tmp_path):
    """cache: remount makes the read unmount and mount again; the mount here then overwrites the head of every
    data file, as a filesystem that lost data across a remount would. The read must refuse, and the next run
    must measure the write again rather than read the bad file or stop at it forever."""
    marker, bindir = tmp_path / "corrupt", tmp_path / "bin"
    # the real mount, then the first 4 KiB of each data file under the mount point (the last argument) overwritten
    corrupt = """"$REAL" "$@" || exit $?
for last; do :; done
for f in "$last"/fsbench-*.dat; do
  [ -e "$f" ] && dd if=/dev/urandom of="$f" bs=4096 count=1 conv=notrunc,fsync status=none
done
exit 0"""
    shim(bindir, "mount", marker, corrupt)
    marker.touch()
    config = small_campaign(scratch, "read-fault", cache="remount")
    proc = run_campaign(tmp_path, config, check=False, env=path_env(bindir))
    assert_clean_failure(proc, scratch, tmp_path, "read-fault", f"read of {CELL}: refusing to read ")
    assert "its first bytes are not the ones written" in proc.stderr
    rep = tmp_path / "results/read-fault/runs/local/demo/ext4/seq-1MiB-buffered-1s/rep1"
    first_write = (rep / "write.json").read_text()
    assert not (rep / "read.json").exists()
    marker.unlink()
    run_campaign(tmp_path, config, env=path_env(bindir))
    assert_complete(tmp_path, "read-fault")
    assert (rep / "write.json").read_text() != first_write  # the write was measured again, then its read
    assert not held(scratch)


SIZE = 192 * MiB


@pytest.fixture
def slow():
    """The campaign's device (conftest.slow_device), held at 8 MB/s: a 64 MiB direct write takes 8 s."""
    with private_scratch() as folder, slow_device(folder / "slow", SIZE, 8 * 10**6) as device:
        yield device


def slow_campaign(scratch, name, slow) -> dict:
    config = small_campaign(scratch, name, size="64MiB", direct=[True])
    return config | {"arrays": {"demo": {"kind": "device", "device": slow.dev}}, "allow_destroy": [slow.dev]}


@contextmanager
def write_under_way(tmp_path, scratch, config):
    """Run the campaign; yields (process, argv) once the write's data file exists. Afterwards no process of the
    run is left."""
    cfg = tmp_path / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", "--configfile", str(cfg)]
    with _started(argv, tmp_path, scratch) as run:
        yield run, argv


@contextmanager
def _started(argv: list[str], tmp_path, scratch):
    """The campaign, started as from a terminal, once its write's data file exists; killed if still running after."""
    run = subprocess.Popen(
        argv,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # As from a terminal: a test run started in the background (`make test &`) ignores SIGINT, and the
        # campaign would inherit that and let Ctrl-C pass.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        for _ in range(1200):
            if list(scratch.rglob("fsbench-*.dat")):
                break
            time.sleep(0.05)
        else:
            pytest.fail("no write started")
        yield run
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()


@needs_throttle
def test_the_device_vanishes_mid_write(scratch, tmp_path, slow):
    """Once the data file exists, the file under the loop device is truncated and the device resized to
    nothing: the write fails with the kernel's error, named by step and cell."""
    name = "vanish"
    config = slow_campaign(scratch, name, slow)
    with write_under_way(tmp_path, scratch, config) as (run, argv):
        slow.resize(0)
        out, err = run.communicate(timeout=600)
    proc = subprocess.CompletedProcess(argv, run.returncode, out, err)
    assert_clean_failure(proc, scratch, tmp_path, name, "write of demo/ext4/seq-1MiB-direct-1s rep 1: ")
    assert not list((tmp_path / "results" / name / "runs").rglob("write.json"))
    slow.resize(SIZE)  # the device back (empty), unthrottled: the same command measures it again
    slow.set_rate(0)
    run_campaign(tmp_path, config)
    assert_complete(tmp_path, name)
    assert not held(scratch)


@needs_throttle
def test_ctrl_c_mid_write_then_the_same_command_finishes(scratch, tmp_path, slow):
    """Ctrl-C in the terminal (SIGINT to the whole foreground process group) while a write is under way: the
    run stops, leaves no measurement of the interrupted cell, and the same command then completes it."""
    name = "interrupted"
    config = slow_campaign(scratch, name, slow)
    with write_under_way(tmp_path, scratch, config) as (run, _):
        os.killpg(run.pid, signal.SIGINT)
        run.communicate(timeout=600)
    assert run.returncode != 0
    assert not list((tmp_path / "results" / name / "runs").rglob("write.json"))
    slow.set_rate(0)
    run_campaign(tmp_path, config)
    assert_complete(tmp_path, name)
    assert not held(scratch)
