"""Identity checks: before a step touches the target, it is in the state the cell needs (our filesystem mounted,
or the bare device unmounted), and before a read, the data is the data its write made."""

import errno
import hashlib
import mmap
import os
from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.engines.job import Stream
from fsbench.storage import arrays, devices
from fsbench.storage.arrays import Target

IDENTITY_BYTES = 4096  # the head of the data, hashed, to tell our data from anything else


def ready_for_io(target: Target, cell: CellSpec, workdir) -> None:
    """Fail fast unless the array is in the state this cell needs: raw unmounted, or our filesystem mounted."""
    if cell.target == "path":
        if not os.path.isdir(target.array.path):
            raise devices.DeviceError(f"{target.array.path} is gone")
        return
    dev = target.array.devices[0]
    mnt = Path(workdir) / "mnt"
    current = devices.mount_at(mnt)
    if cell.target == "raw":
        if current:
            devices.unmount(mnt)
        arrays.check_writable(target.array, workdir)
        return
    uuid = target.filesystem.uuid
    if current is None or current.source != dev or devices.probe(dev)["uuid"] != uuid:
        raise devices.DeviceError(
            f"{mnt} no longer holds filesystem '{cell.target}' ({uuid}) from {dev}; "
            "another step changed the device in between"
        )


def head(stream: Stream) -> str:
    """The hash of the data's first bytes, read without leaving them in the page cache: O_DIRECT where the
    filesystem has it (the read's cache check runs after this), else a plain read whose pages are then dropped."""
    buf = mmap.mmap(-1, IDENTITY_BYTES)  # page-aligned, as O_DIRECT needs
    try:
        fd = os.open(stream.path, os.O_RDONLY | os.O_DIRECT)
        try:
            return hashlib.sha256(buf[: os.preadv(fd, [buf], stream.offset)]).hexdigest()
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:  # EINVAL: no O_DIRECT here (tmpfs) or an unaligned offset
            raise
    fd = os.open(stream.path, os.O_RDONLY)
    try:
        digest = hashlib.sha256(os.pread(fd, IDENTITY_BYTES, stream.offset)).hexdigest()
        os.posix_fadvise(fd, stream.offset, IDENTITY_BYTES, os.POSIX_FADV_DONTNEED)
        return digest
    finally:
        os.close(fd)


def check_identity(stream: Stream, ident: dict) -> None:
    """The file (or device region) must be the one the write made: same inode and size, same first bytes."""
    problems = []
    if not os.path.exists(stream.path):
        problems.append("it is gone")
    else:
        st = os.stat(stream.path)
        if not stream.device and (st.st_dev, st.st_ino, st.st_size) != (
            ident["st_dev"],
            ident["st_ino"],
            ident["size"],
        ):
            problems.append("its inode or size changed")
        if head(stream) != ident["head_sha256"]:
            problems.append("its first bytes are not the ones written")
    if problems:
        raise devices.DeviceError(
            f"refusing to read {stream.path}: it is not what its write made ({'; '.join(problems)}); "
            "rerun so that the write is measured again"
        )
