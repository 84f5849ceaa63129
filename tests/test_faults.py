"""Faults: hostile strings stay inert, a killed run recovers, a full disk and a failing tool are reported
clearly, and whatever happens nothing stays attached or mounted and no half result passes for a figure."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, SNAKEMAKE, frozen_holding, held, needs_root, run_campaign
from conftest import small_campaign as small

pytestmark = [needs_root, pytest.mark.e2e]


def records(work, name):
    """The campaign's measurements (write and read records); the other steps' records are no figure."""
    runs = work / "results" / name / "runs"
    return sorted([*runs.rglob("write.json"), *runs.rglob("read.json")])


def test_hostile_strings_are_passed_as_arguments_never_run(scratch, tmp_path):
    marker = tmp_path / "pwned"
    hostile = [f"$(touch {marker})", f"`touch {marker}`", f";touch {marker}", f"|touch {marker}"]
    for where in ("mkfs", "mount"):
        config = small(scratch, f"hostile-{where}")
        if where == "mkfs":
            config["filesystems"]["ext4"]["mkfs"] = ["-L", *hostile]
        else:  # mount options may not hold spaces or commas; everything else reaches mount as one argument
            config["filesystems"]["ext4"]["mount"] = [h.replace(" ", "") for h in hostile]
        proc = run_campaign(tmp_path / where, config, check=False)
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert ("mkfs.ext4" if where == "mkfs" else "mount -t ext4") in said and "failed (exit" in said
        assert not marker.exists()
        assert not held(scratch)
        assert not records(tmp_path / where, f"hostile-{where}")
    weird = small(tmp_path / f"scratch;touch {marker}", "weird-scratch")
    run_campaign(tmp_path / "weird", weird)
    assert not marker.exists()
    assert not held(tmp_path / f"scratch;touch {marker}")


def test_full_disk_is_reported_and_the_partial_file_removed(scratch, tmp_path):
    # a 64 MiB journal leaves too little room on the 192 MiB image for 128 MiB of data
    config = small(scratch, "full", size="128MiB")
    config["filesystems"]["ext4"]["mkfs"] = ["-J", "size=64"]
    proc = run_campaign(tmp_path, config, check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "not enough space on ext4: the write needs 134217728 bytes" in said
    assert not records(tmp_path, "full")  # a failed measurement leaves no result file
    assert not held(scratch)
    assert not list(scratch.rglob("*.dat"))  # the partial data file went with the image


def test_a_second_run_of_the_same_campaign_is_refused(scratch, tmp_path):
    config = small(scratch, "busy", size="96MiB")
    cfg = tmp_path / "a" / "campaign.yaml"
    cfg.parent.mkdir()
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", "--configfile", str(cfg)]
    log = tmp_path / "first.log"
    with frozen_holding(argv, cfg.parent, log, scratch / "busy" / ".lock", r"^pid (\d+) ") as first:
        second = run_campaign(tmp_path / "b", config, check=False)
        assert second.returncode != 0
        assert "is in use by pid" in second.stdout + second.stderr
    assert first.returncode == 0, log.read_text()[-3000:]
    assert not held(scratch)


def test_kill_9_mid_write_then_rerun_completes(scratch, tmp_path):
    config = small(scratch, "killed", size="96MiB", block_sizes=["64KiB", "1MiB"], repeats=2)
    config["io"]["data"] = "random"
    cfg = tmp_path / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", "--configfile", str(cfg)]
    run = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        for _ in range(1200):  # wait until a write is under way: its data file exists on the mount
            if list(scratch.rglob("fsbench-*.dat")):
                break
            time.sleep(0.05)
        else:
            pytest.fail("no write started")
        os.killpg(run.pid, signal.SIGKILL)
    finally:
        run.wait()
    assert held(scratch)  # the dead run left its loop device and mount behind...
    run_campaign(tmp_path, config)  # ...and the same command again finds them, completes and releases
    df = pd.read_csv(tmp_path / "results/killed/measurements.csv")
    assert len(df) == 2 * 2 * 2 and (df.bytes == 96 * 2**20).all()
    assert not held(scratch)
    assert not list(Path(scratch).rglob("*.img"))
