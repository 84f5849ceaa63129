"""Block devices a campaign makes and uses: loop images, filesystems, mounts, and their release.

Every function brings the real state to what is asked and is safe to call
again (idempotent), because Snakemake may run a step after a crash, a kill or
on a later invocation. A real device (arrays of kind device or mdadm) is written
only after fsbench.storage.guards has passed it (fsbench.storage.arrays.check_writable);
loop devices are those of images under the campaign's own scratch directory.
"""

import fcntl
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from fsbench.storage.filesystems import EXTENDED, FILESYSTEMS
from fsbench.storage.md import mdadm_stop_argv
from fsbench.toolkit.records import Record, read_json, write_json
from fsbench.toolkit.system import Failure, ToolError, output, run


class DeviceError(Failure):
    """The device is not in the state a step needs, or may not be touched."""


@dataclass(frozen=True)
class Mount(Record):
    """A mount as the kernel reports it (/proc/self/mountinfo); where fsbench's mount step made it, its record
    also keeps the options the campaign asked for."""

    source: str
    mountpoint: str
    fstype: str
    options: str  # per-mount and superblock options, as the kernel reports them
    device: str = ""  # major:minor
    asked: tuple[str, ...] = ()


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mounts() -> list[Mount]:
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ", 1)
        f, r = left.split(), right.split()
        found.append(Mount(_unescape(r[1]), _unescape(f[4]), r[0], f"{f[5]},{r[2]}", device=f[2]))
    return found


def mount_at(mountpoint) -> Mount | None:
    """What is mounted at `mountpoint` (the topmost mount), or None."""
    mountpoint = os.path.realpath(mountpoint)
    hits = [m for m in mounts() if m.mountpoint == mountpoint]
    return hits[-1] if hits else None


# --- loop images ---------------------------------------------------------------------------------


def loop_backing() -> dict[str, str]:
    """Attached loop devices and their backing files, read from sysfs."""
    found = {}
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            text = backing.read_text()
        except OSError:  # detached by someone else since the glob (ENODEV, ENOENT): not attached, not listed
            continue
        found[f"/dev/{backing.parent.parent.name}"] = text.strip().removesuffix(" (deleted)")
    return found


def _loop_of(image: Path) -> str | None:
    for dev, backing in loop_backing().items():
        if backing == str(image):
            return dev
    return None


def attach_loop_images(images_dir, members: int, size: int) -> list[str]:
    """Loop devices for `members` preallocated images of `size` bytes, attached with direct I/O.

    Direct I/O on the loop device keeps the backing file's page cache out of the figures;
    preallocation keeps the backing filesystem's block allocation out of them, as long as no mkfs discards
    the device (mkfs_argv's `discard`): the loop driver would punch the image full of holes for it (a 256 MiB
    image held 8.6 MB after a discarding mkfs.ext4), and the writes would allocate in the backing filesystem.
    """
    images_dir = Path(images_dir).resolve()
    images_dir.mkdir(parents=True, exist_ok=True)
    devices = []
    for i in range(members):
        image = images_dir / f"member{i}.img"
        dev = _loop_of(image)
        if dev and image.stat().st_size != size:
            detach(dev)
            dev = None
        if dev is None:
            _make_image(image, size)
            dev = output(["losetup", "--find", "--show", "--direct-io=on", str(image)])
        devices.append(dev)
    return devices


def _make_image(image: Path, size: int) -> None:
    free = shutil.disk_usage(image.parent).free + (image.stat().st_size if image.exists() else 0)
    if free < size:
        raise DeviceError(f"not enough space for loop image {image}: need {size} bytes, {free} free in {image.parent}")
    fd = os.open(image, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, size)
        os.posix_fallocate(fd, 0, size)
    except OSError as e:
        os.close(fd)
        image.unlink()
        raise DeviceError(f"cannot allocate loop image {image} ({size} bytes): {e.strerror}") from None
    os.close(fd)


def detach(dev: str) -> None:
    run(["losetup", "--detach", dev], check=False)


def device_size(dev: str) -> int:
    fd = os.open(dev, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)


def check_ours(dev: str, scratch) -> None:
    """Refuse any device that is not a loop device backed by an image under `scratch`."""
    if not stat.S_ISBLK(os.stat(dev).st_mode):
        raise DeviceError(f"{dev} is not a block device")
    backing = loop_backing().get(dev)
    root = str(Path(scratch).resolve()) + "/"
    if backing is None or not backing.startswith(root):
        raise DeviceError(f"{dev} is not a loop device of this campaign (backing file {backing}, scratch {root})")


# --- filesystems ---------------------------------------------------------------------------------


def probe(dev: str) -> dict:
    """Filesystem signature on `dev` as blkid reads it from the device itself (not its cache)."""
    proc = run(["blkid", "-p", "-o", "export", dev], check=False)
    info = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    return {"type": info.get("TYPE", ""), "uuid": info.get("UUID", "")}


def mkfs_argv(fs_type: str, options: list[str], devices: list[str], discard: bool = True) -> list[str]:
    """The mkfs command (fsbench.storage.filesystems' row, the campaign's options, the devices). Without `discard`
    the tool leaves the device's blocks alone, as a loop member's preallocated image needs (attach_loop_images); on
    a real device its discard (TRIM) stays, as a user's mkfs does it. mke2fs keeps only its last -E, so the row's
    nodiscard and the campaign's own -E (`-E x=1` or `-Ex=1`) join fsbench's -E, the campaign's last: where both set
    an option, the campaign's wins."""
    fs = FILESYSTEMS[fs_type]
    argv, options = list(fs.mkfs), [*([] if discard else fs.no_discard), *options]
    if EXTENDED not in argv:
        return [*argv, *options, *devices]
    options, extended = _extended_options(options)
    at = argv.index(EXTENDED) + 1
    argv[at] = ",".join([argv[at], *extended])
    return [*argv, *options, *devices]


def _extended_options(options: list[str]) -> tuple[list[str], list[str]]:
    """mke2fs options without their -E, and what each -E gave (a -E at the end, with nothing after it, is left for
    mke2fs to refuse)."""
    rest, extended, i = [], [], 0
    while i < len(options):
        o = options[i]
        if o == "-E" and i + 1 < len(options):
            extended.append(options[i + 1])
            i += 2
            continue
        if o.startswith("-E") and len(o) > 2:
            extended.append(o[2:])
        else:
            rest.append(o)
        i += 1
    return rest, extended


def ensure_filesystem(
    devices: list[str],
    mountpoint,
    fs_type: str,
    options: list[str],
    fp: str,
    state_file,
    guard=lambda: None,
    discard: bool = True,
) -> dict:
    """Make the filesystem unless the devices already hold this very one (same settings fingerprint).

    The state file says what fsbench made last; blkid on the device says whether it is still there
    (a raw measurement overwrites it). Returns how the filesystem was made and its identity.
    """
    state = read_json(state_file) if Path(state_file).exists() else {}
    found = probe(devices[0])
    if state.get("fingerprint") == fp and found["uuid"] and found["uuid"] == state.get("uuid"):
        return state | {"made_now": False}
    unmount(mountpoint)
    guard()  # the last word before a device is overwritten
    argv = mkfs_argv(fs_type, options, devices, discard)
    Path(state_file).unlink(missing_ok=True)
    run(argv)
    made = probe(devices[0])
    if made["type"] != fs_type:
        raise DeviceError(f"{' '.join(argv)} succeeded but blkid finds type {made['type']!r} on {devices[0]}")
    state = {"fingerprint": fp, "uuid": made["uuid"], "fs_type": fs_type, "mkfs_argv": argv, "devices": devices}
    state["mkfs_readback"] = fs_readback(fs_type, devices[0])
    write_json(state_file, state)
    return state | {"made_now": True}


def fs_readback(fs_type: str, dev: str) -> str:
    """The filesystem's own account of how it was made, for provenance."""
    proc = run([*FILESYSTEMS[fs_type].readback, dev], check=False)
    return proc.stdout.strip() or proc.stderr.strip()


def ensure_mounted(device: str, mountpoint, fs_type: str, options: list[str], uuid: str) -> Mount:
    """Mount `device` at `mountpoint` unless it already is; the filesystem must be the expected one."""
    mountpoint = Path(mountpoint)
    mountpoint.mkdir(parents=True, exist_ok=True)
    current = mount_at(mountpoint)
    if current and current.source != device:
        unmount(mountpoint)
        current = None
    if current is None:
        fs = FILESYSTEMS[fs_type]
        if fs.before_mount:  # e.g. btrfs over several devices: the kernel must know them all
            run(list(fs.before_mount), check=False)
        argv, options = ["mount", "-t", fs_type], [*fs.mount, *options]
        if options:
            argv += ["-o", ",".join(options)]
        run([*argv, device, str(mountpoint)])
        current = mount_at(mountpoint)
    found = probe(device)["uuid"]
    if current is None or found != uuid:
        raise DeviceError(f"{mountpoint} does not hold filesystem {uuid} from {device} (found {found!r})")
    return current


def unmount(mountpoint) -> None:
    while mount_at(mountpoint):
        run(["umount", str(mountpoint)])


# --- one campaign at a time ---------------------------------------------------------------------


def hold_lock(path, owner: str) -> int | None:
    """Take the flock on `path` and write `owner` into it; the kernel drops the lock when its holder dies, even
    by kill -9, so a killed run never blocks the next. Returns the descriptor to keep open, or None when
    another process holds the lock (its owner text is then in the file)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, owner.encode())
    return fd


def lock_campaign(workdir) -> int:
    """Hold the campaign's lock for as long as the returned descriptor stays open: one run per campaign."""
    path = Path(workdir) / ".lock"
    fd = hold_lock(path, f"pid {os.getpid()} ({' '.join(sys.argv)[:200]})")
    if fd is None:
        holder = path.read_text().strip() or "another process"
        raise DeviceError(f"campaign scratch {workdir} is in use by {holder}; wait for it or stop it")
    return fd


# --- release -------------------------------------------------------------------------------------


def release(scratch) -> list[str]:
    """Unmount and detach everything under `scratch`, delete its images; returns what was released.

    Safe to run at any time: it touches only mounts and loop devices whose mount point or
    backing file lies under `scratch`, which is where a campaign keeps all it makes.
    """
    root = str(Path(scratch).resolve())
    done = []
    for m in sorted(mounts(), key=lambda m: -len(m.mountpoint)):
        if m.mountpoint == root or m.mountpoint.startswith(root + "/"):
            if mount_at(m.mountpoint):
                run(["umount", m.mountpoint], check=False)
                done.append(f"unmounted {m.mountpoint}")
    for dev, backing in loop_backing().items():
        if backing.startswith(root + "/"):
            detach(dev)
            done.append(f"detached {dev} ({backing})")
    md = Path(root) / "md.json"
    if md.exists():  # an md array assembled over the members: stop it before they go
        name = read_json(md)["md"]
        run(mdadm_stop_argv(name), check=False)
        md.unlink()
        done.append(f"stopped {name}")
    path = Path(root) / "path.json"
    if path.exists():  # a path array: remove only fsbench's own subfolder and data files
        data = Path(read_json(path)["data"])
        for f in data.glob("fsbench-*.dat"):
            f.unlink()
        for tree in data.glob("fsbench-meta-*"):  # a metadata test's files, left by an interrupted run
            shutil.rmtree(tree)
        if data.is_dir() and not any(data.iterdir()):
            data.rmdir()
            done.append(f"removed {data}")
        path.unlink()
    leftovers = [m.mountpoint for m in mounts() if m.mountpoint.startswith(root + "/")]
    leftovers += [d for d, b in loop_backing().items() if b.startswith(root + "/")]
    if leftovers:
        raise ToolError(f"could not release: {', '.join(leftovers)}")
    for image in Path(root).glob("**/*.img"):
        image.unlink()
        done.append(f"deleted {image}")
    for state in Path(root).glob("**/filesystem.json"):
        state.unlink()
    return done
