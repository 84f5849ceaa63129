"""The filesystems fsbench makes, one row each: a new filesystem is a row here plus its run through
tests/test_devices.py (which takes every row: made, mounted, remade, and made without discarding).

Each row says how fsbench makes it (the mkfs command before the campaign's options: the force flag each tool needs
to overwrite an earlier filesystem on the same image, lazy initialisation off so that no kernel thread writes in the
background while we measure), how that mkfs leaves the device's blocks alone (a loop member's preallocated image
must not be discarded: fsbench.storage.devices.attach_loop_images), the mount options fsbench adds before the
campaign's (none so far), the command that reads back how it was made (provenance), and what must run before a
mount (a filesystem over several devices: the kernel must know them all).
"""

from dataclasses import dataclass
from pathlib import Path

EXTENDED = "-E"  # mke2fs's extended options: it keeps only its last -E (fsbench.storage.devices.mkfs_argv)
MiB = 2**20


@dataclass(frozen=True)
class Filesystem:
    name: str  # the type, as mount, blkid and /proc/filesystems name it
    mkfs: tuple[str, ...]  # the command and fsbench's own options, before the campaign's and the devices
    no_discard: tuple[str, ...]  # the options that keep mkfs from discarding (a -E's join fsbench's -E)
    readback: tuple[str, ...]  # the command that reads back how it was made, the device appended
    version: tuple[str, ...]  # the command that prints its mkfs's version (provenance)
    package: str  # the Debian package of its tools
    mount: tuple[str, ...] = ()  # options fsbench adds to the campaign's mount options (before them)
    before_mount: tuple[str, ...] = ()  # a command run before each mount
    spans_devices: bool = False  # one filesystem over several devices, without md (btrfs)
    fixed_inodes: bool = False  # a fixed inode table (ext2-4): a metadata test may run out of it
    min_image: int = 0  # the smallest device its mkfs accepts (config checks a loop image against it)


_EXT_READBACK = ("dumpe2fs", "-h")


def _ext(name: str, extended: str) -> Filesystem:
    return Filesystem(
        name,
        (f"mkfs.{name}", "-F", "-q", EXTENDED, extended),
        (EXTENDED, "nodiscard"),
        _EXT_READBACK,
        ("mkfs.ext4", "-V"),  # one mke2fs makes ext2-4
        "e2fsprogs",
        fixed_inodes=True,
    )


FILESYSTEMS = {
    fs.name: fs
    for fs in [
        _ext("ext2", "lazy_itable_init=0"),
        _ext("ext3", "lazy_itable_init=0,lazy_journal_init=0"),
        _ext("ext4", "lazy_itable_init=0,lazy_journal_init=0"),
        Filesystem(
            "xfs",
            ("mkfs.xfs", "-f", "-q"),
            ("-K",),
            ("xfs_db", "-r", "-c", "info"),
            ("mkfs.xfs", "-V"),
            "xfsprogs",
            min_image=300 * MiB,
        ),
        Filesystem(
            "btrfs",
            ("mkfs.btrfs", "-f", "-q"),
            ("-K",),
            ("btrfs", "inspect-internal", "dump-super"),
            ("mkfs.btrfs", "--version"),
            "btrfs-progs",
            before_mount=("btrfs", "device", "scan"),
            spans_devices=True,
            min_image=128 * MiB,
        ),
        Filesystem(
            "f2fs",
            ("mkfs.f2fs", "-f", "-q"),
            ("-t", "0"),
            ("dump.f2fs", "-d", "1"),
            ("mkfs.f2fs", "-V"),
            "f2fs-tools",
        ),
    ]
}


def in_kernel(name: str) -> bool:
    """Whether this kernel mounts `name` now or has a module for it (which mount loads)."""
    if any(line.split()[-1] == name for line in Path("/proc/filesystems").read_text().splitlines() if line.strip()):
        return True
    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    return any(Path("/lib/modules", release, "kernel/fs", name).glob(f"{name}.ko*"))
