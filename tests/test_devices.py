"""Loop images, mkfs, mount and release, for real; and the guard that keeps fsbench off other devices."""

import os
import re
import shutil
from pathlib import Path

import pytest

from fsbench.campaign.cells import CellSpec, fingerprint
from fsbench.storage import devices
from fsbench.storage.filesystems import FILESYSTEMS, in_kernel

from conftest import held, kernel_condition, missing, needs_root

pytestmark = needs_root
MiB = 2**20


def test_attach_is_idempotent_and_uses_direct_io(scratch):
    first = devices.attach_loop_images(scratch / "images", 1, 64 * MiB)
    again = devices.attach_loop_images(scratch / "images", 1, 64 * MiB)
    assert first == again
    name = Path(first[0]).name
    assert Path(f"/sys/block/{name}/loop/dio").read_text().strip() == "1"
    assert devices.device_size(first[0]) == 64 * MiB
    image = scratch / "images" / "member0.img"
    assert os.stat(image).st_blocks * 512 >= 64 * MiB  # preallocated, not sparse


def test_check_ours_refuses_other_devices(scratch, tmp_path):
    dev = devices.attach_loop_images(scratch / "images", 1, 16 * MiB)[0]
    devices.check_ours(dev, scratch)
    with pytest.raises(devices.DeviceError, match="not a loop device of this campaign"):
        devices.check_ours(dev, tmp_path)
    root = next(m.source for m in devices.mounts() if m.mountpoint == "/")
    if root.startswith("/dev/"):
        with pytest.raises(devices.DeviceError):
            devices.check_ours(root, scratch)
    with pytest.raises(devices.DeviceError, match="not a block device"):
        devices.check_ours("/dev/null", scratch)


def can_make(fs_type: str) -> None:
    """Skip (through conftest.missing) a filesystem this machine cannot make or mount, saying why."""
    fs = FILESYSTEMS[fs_type]
    if not in_kernel(fs_type):
        release = Path("/proc/sys/kernel/osrelease").read_text().strip()
        kernel_condition("filesystem", f"{fs_type}: not in /proc/filesystems of {release}")
    if shutil.which(fs.mkfs[0]) is None:
        missing("filesystems", f"no {fs.mkfs[0]} here: apt-get install {fs.package}")


# Each filesystem's mkfs and mount as fsbench runs them (fsbench.storage.filesystems): a new row adds its line.
ARGV = {
    "ext2": ["mkfs.ext2", "-F", "-q", "-E", "lazy_itable_init=0"],
    "ext3": ["mkfs.ext3", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
    "f2fs": ["mkfs.f2fs", "-f", "-q"],
}
NO_DISCARD = {"xfs": ["-K"], "btrfs": ["-K"], "f2fs": ["-t", "0"]}  # ext: nodiscard joins fsbench's -E


@pytest.mark.parametrize("fs_type", FILESYSTEMS)
def test_each_filesystems_mkfs_argv(fs_type):
    assert set(ARGV) == set(FILESYSTEMS), "a filesystem without its argv here (or an argv without its row)"
    assert devices.mkfs_argv(fs_type, ["-x"], ["/dev/a"]) == [*ARGV[fs_type], "-x", "/dev/a"]
    kept = devices.mkfs_argv(fs_type, ["-x"], ["/dev/a"], discard=False)
    if fs_type.startswith("ext"):
        assert kept == [*ARGV[fs_type][:-1], ARGV[fs_type][-1] + ",nodiscard", "-x", "/dev/a"]
    else:
        assert kept == [*ARGV[fs_type], *NO_DISCARD[fs_type], "-x", "/dev/a"]


@pytest.mark.parametrize("fs_type", FILESYSTEMS)
def test_make_mount_and_remake_only_when_settings_change(scratch, fs_type):
    can_make(fs_type)
    dev = devices.attach_loop_images(scratch / "images", 1, 320 * MiB)[0]
    state, mnt = scratch / "filesystem.json", scratch / "mnt"
    made = devices.ensure_filesystem([dev], mnt, fs_type, [], "fp1", state)
    assert made["made_now"] and devices.probe(dev)["type"] == fs_type
    assert made["mkfs_readback"]
    if fs_type.startswith("ext"):
        assert "lazy_itable_init=0" in " ".join(made["mkfs_argv"])
    m = devices.ensure_mounted(dev, mnt, fs_type, ["noatime"], made["uuid"])
    assert m.source == dev and m.fstype == fs_type and "noatime" in m.options
    assert devices.ensure_filesystem([dev], mnt, fs_type, [], "fp1", state)["made_now"] is False
    assert devices.mount_at(mnt) is not None  # an unchanged filesystem stays mounted
    remade = devices.ensure_filesystem([dev], mnt, fs_type, [], "fp2", state)
    assert remade["made_now"] and remade["uuid"] != made["uuid"]
    assert devices.mount_at(mnt) is None  # unmounted before it was remade


@pytest.mark.parametrize("fs_type", FILESYSTEMS)
def test_mkfs_without_discard_leaves_the_preallocated_image_whole(scratch, fs_type):
    """A discarding mkfs punches the loop's image full of holes (its writes then allocate in the backing
    filesystem); mkfs on a loop member must not discard. With discard, the same test sees the holes."""
    can_make(fs_type)
    image = scratch / "images" / "member0.img"
    for discard in (False, True):
        dev = devices.attach_loop_images(scratch / "images", 1, 320 * MiB)[0]
        devices.ensure_filesystem(
            [dev], scratch / "mnt", fs_type, [], f"fp{discard}", scratch / "fs.json", discard=discard
        )
        allocated = os.stat(image).st_blocks * 512
        if discard:
            assert allocated < 160 * MiB, "a discarding mkfs left the image whole: this test cannot tell"
        else:
            assert allocated >= 320 * MiB, f"{fs_type}'s mkfs left {allocated} of {320 * MiB} bytes allocated"
        devices.release(scratch)
        image.unlink(missing_ok=True)  # release may have removed it: the next round starts from a new one


def test_a_campaigns_own_extended_options_join_fsbenchs_and_win_where_both_set_one():
    """mke2fs keeps only its last -E: a campaign's own would drop fsbench's (lazy init off, no discard on a loop)."""
    argv = devices.mkfs_argv("ext4", ["-E", "stride=16", "-b", "4096", "-Elazy_itable_init=1"], ["/dev/x"], False)
    extended = "lazy_itable_init=0,lazy_journal_init=0,nodiscard,stride=16,lazy_itable_init=1"
    assert argv == ["mkfs.ext4", "-F", "-q", "-E", extended, "-b", "4096", "/dev/x"]
    assert devices.mkfs_argv("ext2", [], ["/dev/x"]) == ["mkfs.ext2", "-F", "-q", "-E", "lazy_itable_init=0", "/dev/x"]
    assert devices.mkfs_argv("xfs", ["-E"], ["/dev/x"], False) == ["mkfs.xfs", "-f", "-q", "-K", "-E", "/dev/x"]
    assert devices.mkfs_argv("ext4", ["-E"], ["/dev/x"])[-2:] == ["-E", "/dev/x"]  # for mke2fs to refuse


def test_with_a_campaigns_own_extended_option_mkfs_still_zeroes_its_tables_and_keeps_the_image_whole(scratch):
    import subprocess

    dev = devices.attach_loop_images(scratch / "images", 1, 320 * MiB)[0]
    devices.ensure_filesystem(
        [dev], scratch / "mnt", "ext4", ["-E", "stride=16"], "fp", scratch / "fs.json", discard=False
    )
    assert os.stat(scratch / "images" / "member0.img").st_blocks * 512 >= 320 * MiB  # nodiscard kept
    dumped = subprocess.run(["dumpe2fs", dev], capture_output=True, text=True, check=True).stdout
    groups = [line for line in dumped.splitlines() if re.match(r"Group \d+:", line)]
    assert "RAID stride:              16" in dumped  # the campaign's option
    assert groups and all("ITABLE_ZEROED" in g for g in groups)  # fsbench's: no ext4lazyinit while measuring


def test_a_bad_mkfs_option_names_the_tools_error(scratch):
    dev = devices.attach_loop_images(scratch / "images", 1, 64 * MiB)[0]
    with pytest.raises(devices.ToolError, match=r"mkfs.ext4 .*--no-such-option.* failed \(exit"):
        devices.ensure_filesystem([dev], scratch / "mnt", "ext4", ["--no-such-option"], "fp", scratch / "fs.json")


def test_release_leaves_nothing(scratch):
    dev = devices.attach_loop_images(scratch / "a" / "images", 1, 64 * MiB)[0]
    made = devices.ensure_filesystem([dev], scratch / "a" / "mnt", "ext4", [], "fp", scratch / "a" / "fs.json")
    devices.ensure_mounted(dev, scratch / "a" / "mnt", "ext4", [], made["uuid"])
    assert held(scratch)
    done = devices.release(scratch)
    assert any("unmounted" in d for d in done) and any("detached" in d for d in done)
    assert not held(scratch) and not list(scratch.glob("**/*.img"))
    assert devices.release(scratch) == []  # nothing left to do the second time


def test_release_command_frees_a_campaign(scratch, tmp_path):
    import subprocess
    import sys

    import yaml

    from conftest import REPO

    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"campaign": "rel", "scratch": str(scratch), "arrays": {"a": {"kind": "loop"}}}))
    devices.attach_loop_images(scratch / "rel" / "a" / "images", 1, 16 * MiB)
    argv = [sys.executable, "-m", "fsbench", "release", str(campaign)]
    env = {"PYTHONPATH": str(REPO / "scripts"), "PATH": os.environ["PATH"]}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 0 and "detached" in proc.stdout
    assert not held(scratch)
    campaign.write_text("io: {repeats: 0}\n")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    assert proc.returncode == 2 and "config key 'io.repeats': value 0" in proc.stderr


def btrfs_cell(bs: int, size: int, workdir) -> CellSpec:
    """A cell on a 1 GiB btrfs loop array, as rules/common.smk's cell_spec makes it (no config check)."""

    array = {"kind": "loop", "members": 1, "size": 1024 * MiB, "level": None, "chunk": 512 * 1024}
    fs = {"type": "btrfs", "mkfs": [], "mount": []}
    fs |= {"name": "btrfs", "fingerprint": fingerprint(fs, array)}
    return CellSpec(
        campaign="c",
        host="local",
        array="d",
        target="btrfs",
        fs_type="btrfs",
        pattern="seq",
        block_size=bs,
        direct=False,
        streams=1,
        rep=1,
        test=f"seq-{bs // MiB}MiB-buffered-1s",
        size=size,
        data="zero",
        engine="python",
        cache="fadvise",
        array_spec=array,
        fs=fs,
        workdir=str(workdir),
    )


def test_the_next_cell_finds_the_space_the_last_one_freed_on_btrfs(scratch):
    """btrfs returns a deleted file's space only at its next commit; two 512 MiB cells in a row on a 1 GiB
    btrfs (the default campaign) must both fit, and the space check must not refuse the second."""
    from fsbench.measurement.steps import run_cell

    for bs in (4 * MiB, 1 * MiB):
        records = run_cell(btrfs_cell(bs, 512 * MiB, scratch / "c" / "d"), scratch / "c" / "d")
        assert records["read"]["row"]["bytes"] == 512 * MiB
    devices.release(scratch / "c" / "d")
    assert not held(scratch)


def test_a_disk_that_fills_up_during_the_write_leaves_no_partial_file(scratch):
    """statvfs on a fresh 1 GiB btrfs counts ~1.07 GB free, but data can use only ~0.95 GB: a 1000 MiB write
    passes the space check and runs out of space half way. The step says so with the numbers and removes
    the partial file, so neither a wrong figure nor a full disk is left behind."""
    from fsbench.measurement.steps import run_cell

    with pytest.raises(devices.DeviceError) as e:
        run_cell(btrfs_cell(4 * MiB, 1000 * MiB, scratch / "c" / "d"), scratch / "c" / "d")
    said = str(e.value)
    assert said.startswith(f"ran out of space writing {1000 * MiB} bytes to btrfs (") and "bytes were free)" in said
    mnt = scratch / "c" / "d" / "mnt"
    assert devices.mount_at(mnt) is not None and list(mnt.glob("fsbench-*")) == []
    devices.release(scratch / "c" / "d")
    assert not held(scratch)
