"""Identity checks: before a step touches the target, it is in the state the cell needs (our filesystem mounted,
or the bare device unmounted), and before a read, the data is the data its write made."""

import errno
import hashlib
import mmap
import os
from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.engines.job import Job, Stream
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


def head_region(stream: Stream, block_size: int, slots: int = 1) -> tuple[int, int]:
    """Where a stream's identity is read (offset, bytes): the start of its own first block. In a file shared
    by hosts, the file's first block is another host's, which may still be written after this host's write
    ended; a block smaller than IDENTITY_BYTES leaves the next slot's block out."""
    if slots == 1:
        return stream.offset, IDENTITY_BYTES
    return stream.offset + stream.slot * block_size, min(IDENTITY_BYTES, block_size)


def head(path: str, offset: int, size: int = IDENTITY_BYTES) -> str:
    """The hash of `size` bytes of the data at `offset`, read without leaving them in the page cache: O_DIRECT
    where the filesystem has it (the read's cache check runs after this), else a plain read whose pages are
    then dropped."""
    buf = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        try:
            return hashlib.sha256(buf[: os.preadv(fd, [buf], offset)]).hexdigest()
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:  # EINVAL: no O_DIRECT here (tmpfs) or an unaligned offset
            raise
    fd = os.open(path, os.O_RDONLY)
    try:
        digest = hashlib.sha256(os.pread(fd, size, offset)).hexdigest()
        os.posix_fadvise(fd, offset, size, os.POSIX_FADV_DONTNEED)
        return digest
    finally:
        os.close(fd)


def identify(job: Job) -> list[dict]:
    """What each stream's write made, as its read checks it (check_identity): the file, its size and a hash of
    the stream's first bytes."""
    identity = []
    for stream in job.streams:
        st = os.stat(stream.path)
        at, length = head_region(stream, job.block_size, job.slots)
        identity.append(
            {
                "path": stream.path,
                "offset": stream.offset,
                "st_dev": st.st_dev,
                "st_ino": st.st_ino,
                # a file shared with other hosts' streams grows until the last host's write ends: not known here
                "size": st.st_size if job.slots in (1, len(job.streams)) else None,
                "head_offset": at,
                "head_bytes": length,
                "head_sha256": head(stream.path, at, length),
            }
        )
    return identity


def check_identity(stream: Stream, ident: dict, other_client: bool = False) -> None:
    """The file (or device region) must be the one the write made: same inode and size, same first bytes. Read
    from another host's client (other_client), st_dev is that client's number for the mount: not compared."""
    problems = []
    if not os.path.exists(stream.path):
        problems.append("it is gone")
    else:
        st = os.stat(stream.path)
        size = st.st_size if ident["size"] is not None else None  # None: a file shared by hosts (see identify)
        if not stream.device and (st.st_dev if not other_client else None, st.st_ino, size) != (
            ident["st_dev"] if not other_client else None,
            ident["st_ino"],
            ident["size"],
        ):
            problems.append("its inode or size changed")
        # records before the head moved to the stream's own block (head_offset) hashed the data's first bytes
        at, length = ident.get("head_offset", stream.offset), ident.get("head_bytes", IDENTITY_BYTES)
        if head(stream.path, at, length) != ident["head_sha256"]:
            problems.append("its first bytes are not the ones written")
    if problems:
        raise devices.DeviceError(
            f"refusing to read {stream.path}: it is not what its write made ({'; '.join(problems)}); "
            "rerun so that the write is measured again"
        )
