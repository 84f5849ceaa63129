"""A cold cache before a read: the page cache of the job's files emptied the way the campaign asks (io.cache)."""

from pathlib import Path

from fsbench.engines.job import Job
from fsbench.storage import cache, devices
from fsbench.storage.arrays import Target


def make_cold(job: Job, method: str, target: Target, workdir) -> str:
    """Empty the page cache of the job's files the way the campaign asks; returns what was done."""
    paths = sorted({s.path for s in job.streams})
    if method == "drop":
        cache.drop_cache(paths)
        return "sync; posix_fadvise(DONTNEED); echo 3 > /proc/sys/vm/drop_caches"
    if method == "fadvise":
        cache.fadvise_cache(paths)
        return "sync; posix_fadvise(DONTNEED)"
    if method == "remount" and target.mount:
        fs, mnt = target.filesystem, Path(workdir) / "mnt"
        devices.unmount(mnt)
        devices.ensure_mounted(target.array.devices[0], mnt, fs.fs_type, list(target.mount.asked), fs.uuid)
        return "umount; mount"
    if method == "remount":  # a bare device has no mount: its cache goes when its last opener closes it
        cache.fadvise_cache(paths)
        return "raw device: last close drops its cache; sync; posix_fadvise(DONTNEED)"
    return "O_DIRECT read (no cache drop)"
