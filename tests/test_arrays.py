"""Real storage, safely: device, mdadm, multi-member loop, btrfs raid and path arrays, and the guards
that refuse a device in use. Every device here is a loop device the test made itself."""

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from fsbench.storage import devices, guards, md

from conftest import REPO, SNAKEMAKE, frozen_holding, held, kernel_condition, needs_root, run_campaign

pytestmark = [needs_root, pytest.mark.e2e]
MiB = 2**20


@pytest.fixture
def disk(scratch):
    """A 'real' device for a campaign to be given: a loop device this test made, outside any campaign's scratch."""
    return devices.attach_loop_images(scratch / "disks", 1, 256 * MiB)[0]


def checksum(dev: str) -> str:
    with open(dev, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def campaign(scratch, name, arrays, **extra):
    return {
        "campaign": name,
        "scratch": str(scratch / "c"),
        "arrays": arrays,
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {"size": "32MiB", "block_sizes": ["1MiB"], "repeats": 1},
    } | extra


def records(work: Path, name: str, target: str) -> list[Path]:
    """The measurements of one target: results/<campaign>/runs/<host>/<array>/<target>/<test>/rep<r>/<op>.json."""
    found = (work / "results" / name / "runs").glob(f"*/*/{target}/*/rep*/*.json")
    return sorted(p for p in found if p.name in ("write.json", "read.json"))


def setup(record: Path) -> dict:
    """What the steps before the write found or made on the array for that measurement."""
    return json.loads(record.read_text())["setup"]


def test_device_array_runs_end_to_end_and_stays_attached(scratch, disk, tmp_path):
    config = campaign(scratch, "dev", {"d": {"kind": "device", "device": disk}}, allow_destroy=[disk])
    config["io"]["block_sizes"] = ["1MiB", "4MiB"]  # a second cell finds ext4 mounted by the first: ours
    run_campaign(tmp_path, config)
    df = pd.read_csv(tmp_path / "results/dev/measurements.csv")
    assert sorted(set(df.target)) == ["ext4", "raw"] and len(df) == 8
    assert disk in devices.loop_backing()  # not ours to detach
    mnt = scratch / "c" / "dev" / "d" / "mnt"  # where the mount steps mounted ext4, as their records say
    assert {setup(r).get("mount", {}).get("mountpoint") for r in records(tmp_path, "dev", "ext4")} == {str(mnt)}
    assert devices.mount_at(mnt) is None  # ...and unmounted again at the end
    prov = json.loads((tmp_path / "results/dev/provenance.json").read_text())
    assert prov["arrays"]["d"]["devices"][0]["device"] == disk


def test_unlisted_device_is_refused_before_anything(scratch, disk, tmp_path):
    before = checksum(disk)
    proc = run_campaign(tmp_path, campaign(scratch, "unlisted", {"d": {"kind": "device", "device": disk}}), check=False)
    assert proc.returncode != 0 and f"'arrays.d.device': value '{disk}'" in proc.stdout + proc.stderr
    assert "allow_destroy" in proc.stdout + proc.stderr
    assert checksum(disk) == before


def test_mounted_device_is_refused_and_left_unchanged(scratch, disk, tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", disk], check=True)
    mnt = scratch / "theirs"
    mnt.mkdir()
    subprocess.run(["mount", disk, str(mnt)], check=True)
    (mnt / "precious").write_text("keep me")
    subprocess.run(["umount", str(mnt)], check=True)
    subprocess.run(["mount", "-o", "ro", disk, str(mnt)], check=True)  # read-only: the content stays still
    try:
        before = checksum(disk)
        config = campaign(scratch, "mounted", {"d": {"kind": "device", "device": disk}}, allow_destroy=[disk])
        proc = run_campaign(tmp_path, config, check=False)
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0 and f"{disk} is mounted at {mnt}" in said and "(it holds ext4" in said
        assert checksum(disk) == before and (mnt / "precious").read_text() == "keep me"
        assert not list(tmp_path.glob("results/mounted/runs/**/*.json"))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_md_member_and_swap_parsers():
    mdstat = "Personalities : [raid0]\nmd127 : active raid0 loop3[1] loop2[0]\n      1046528 blocks\nunused devices:\n"
    assert guards.md_members(mdstat) == {"/dev/loop3": "md127", "/dev/loop2": "md127"}
    swaps = "Filename\tType\tSize\tUsed\tPriority\n/dev/zram0 partition 1024 0 100\n"
    assert guards.active_swaps(swaps) == {"/dev/zram0"}


def test_two_campaigns_cannot_share_a_device(scratch, disk, tmp_path):
    first_cfg = campaign(scratch, "one", {"d": {"kind": "device", "device": disk}}, allow_destroy=[disk])
    first_cfg["io"]["size"] = "96MiB"
    cfg = tmp_path / "one.yaml"
    cfg.write_text(yaml.safe_dump(first_cfg))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", "--configfile", str(cfg)]
    rdev = os.stat(disk).st_rdev  # the lock guards.lock_device takes on it
    lock = guards.LOCK_DIR / f"{os.major(rdev)}_{os.minor(rdev)}.lock"
    log = tmp_path / "one.log"
    with frozen_holding(argv, tmp_path, log, lock, r"^campaign 'one', pid (\d+)$") as first:
        second = campaign(scratch, "two", {"d": {"kind": "device", "device": disk}}, allow_destroy=[disk])
        proc = run_campaign(tmp_path / "two", second, check=False)
        assert proc.returncode != 0
        assert f"{disk} is in use by another campaign: campaign 'one'" in proc.stdout + proc.stderr
    assert first.returncode == 0, log.read_text()[-3000:]


def test_path_array_runs_without_mkfs_or_mount(scratch, tmp_path):
    data = Path("/var/tmp") / f"fsbench-path-test-{scratch.name}"
    data.mkdir()
    try:
        config = campaign(scratch, "path", {"p": {"kind": "path", "path": str(data)}}, raw=True)
        config["io"]["cache"] = "fadvise"
        config["metadata"] = {"files": 200, "file_size": "4KiB", "dirs": 2}
        proc = run_campaign(tmp_path, config)
        every = pd.read_csv(tmp_path / "results/path/measurements.csv")
        df = every[every.workload == "io"]
        assert list(df.target) == ["path", "path"] and set(df.op) == {"write", "read"}
        fs_type = subprocess.run(
            ["findmnt", "-n", "-o", "FSTYPE", "-T", str(data)], capture_output=True, text=True
        ).stdout.strip()
        assert (df.bytes == 32 * MiB).all()
        # One fs_type for every row of the folder, block I/O and metadata alike: the one the path lies on.
        assert set(every.workload) == {"io", "metadata"} and (every.fs_type == fs_type).all()
        log = proc.stdout + proc.stderr
        assert "target=path" in log and "target=raw" not in log
        logs = tmp_path / "results/path/logs"
        step_log = (logs / "write/local/p/path/seq-1MiB-buffered-1s/rep1.log").read_text()
        assert step_log.count("write: 33554432 bytes") == 1 and step_log.count("done in") == 1
        assert not (logs / "mkfs").exists() and not (logs / "mount").exists()  # no mkfs or mount step ran
        path_records = records(tmp_path, "path", "path")  # the steps made and mounted nothing
        assert len(path_records) == 2 and all(setup(r)["kind"] == "path" for r in path_records)
        assert not any({"filesystem", "mount"} & setup(r).keys() for r in path_records)
        assert not list((tmp_path / "results/path/runs").glob("*/*/raw"))
        assert not held(scratch) and list(data.iterdir()) == []  # fsbench's subfolder is gone again
    finally:
        subprocess.run(["rm", "-rf", str(data)], check=False)


def test_btrfs_raid0_over_four_loop_members(scratch, tmp_path):
    btrfs = {"type": "btrfs", "mkfs": ["-d", "raid0", "-m", "raid1"]}
    config = campaign(
        scratch, "raid", {"r": {"kind": "loop", "members": 4, "size": "160MiB"}}, filesystems={"b": btrfs}
    )
    run_campaign(tmp_path, config)
    df = pd.read_csv(tmp_path / "results/raid/measurements.csv")
    assert list(df.target) == ["b", "b"] and (df.fs_type == "btrfs").all()
    prov = json.loads((tmp_path / "results/raid/provenance.json").read_text())
    b = prov["arrays"]["r"]["targets"]["b"]
    assert b["mkfs_argv"][-8:-4] == ["-d", "raid0", "-m", "raid1"] and len(b["mkfs_argv"][-4:]) == 4
    assert "num_devices\t\t4" in b["mkfs_readback"] or "num_devices 4" in " ".join(b["mkfs_readback"].split())
    assert not held(scratch / "c")


@pytest.mark.parametrize("kind", ["mdadm", "loop"])
def test_md_stops_here_with_a_clear_message(scratch, tmp_path, kind):
    if md.md_support() is None:
        kernel_condition("md")
    extra = devices.attach_loop_images(scratch / "disks2", 1, 128 * MiB)[0]
    if kind == "mdadm":
        disk = devices.attach_loop_images(scratch / "disks", 1, 128 * MiB)[0]
        arrays = {"m": {"kind": "mdadm", "devices": [disk, extra], "level": 0, "chunk": "64KiB"}}
        config = campaign(scratch, "md", arrays, allow_destroy=[disk, extra])
    else:
        disk = extra
        config = campaign(scratch, "md", {"m": {"kind": "loop", "members": 2, "level": 0, "size": "128MiB"}})
    before = checksum(disk)
    proc = run_campaign(tmp_path, config, check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"arrays.m (kind {kind}, RAID 0): this kernel" in said and "has no md (software RAID) driver" in said
    assert "nothing was written" in said
    assert checksum(disk) == before and not held(scratch / "c")


def test_mdadm_commands():
    argv = md.mdadm_create_argv("/dev/md/x", 5, 512 * 1024, ["/dev/sdb", "/dev/sdc", "/dev/sdd"])
    assert argv == [
        "mdadm",
        "--create",
        "/dev/md/x",
        "--run",
        "--metadata=1.2",
        "--level=5",
        "--raid-devices=3",
        "--chunk=512K",
        "--assume-clean",
        "/dev/sdb",
        "/dev/sdc",
        "/dev/sdd",
    ]
    assert "--chunk=512K" not in md.mdadm_create_argv("/dev/md/x", 1, 512 * 1024, ["/dev/a", "/dev/b"])
    assert md.mdadm_stop_argv("/dev/md/x") == ["mdadm", "--stop", "/dev/md/x"]
