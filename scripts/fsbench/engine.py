"""The python I/O engine and the cold-read machinery shared by all engines.

Writes time the flush too (the durable figure); reads start from a cache that
was emptied and then measured, so a read's `cached_before` is a fact, not a hope.
"""

import ctypes
import mmap
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime

PAGE = mmap.PAGESIZE
# Random data is drawn once into a pool this large and written in turn: no compressor or
# deduplicating device sees a repeat within 16 MiB, and no block is allocated per write.
POOL_BYTES = 16 * 2**20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


@dataclass(frozen=True)
class Stream:
    """Where one stream's data goes: a file, or a region of a bare device starting at `offset`."""

    path: str
    offset: int = 0
    device: bool = False


@dataclass(frozen=True)
class Job:
    """One measurement as every engine runs it: each stream moves `size` bytes in `block_size` blocks."""

    streams: tuple[Stream, ...]
    size: int
    block_size: int
    pattern: str = "seq"  # seq | rand: rand touches every block once, in an order drawn from `seed`
    direct: bool = False  # O_DIRECT
    data: str = "random"  # random (incompressible) | zero
    seed: int = 0

    @property
    def count(self) -> int:
        return self.size // self.block_size


def aggregate(streams: list[dict], command: str) -> dict:
    """Many streams as one figure: total bytes over the time from the first start to the last end.

    Each stream dict has bytes and the wall-clock (epoch seconds) start, end and end_durable.
    """
    start = min(s["start"] for s in streams)
    return {
        "bytes": sum(s["bytes"] for s in streams),
        "seconds": max(s["end"] for s in streams) - start,
        "seconds_durable": max(s["end_durable"] for s in streams) - start,
        "started_at": datetime.fromtimestamp(start, UTC).isoformat(timespec="microseconds"),
        "command": command,
        "streams": streams,
    }


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def data_pool(block_size: int, data: str) -> tuple[mmap.mmap, list[memoryview]]:
    """A page-aligned buffer of random (or zero) bytes and its block-sized slices."""
    blocks = max(1, POOL_BYTES // block_size)
    pool = mmap.mmap(-1, blocks * block_size)
    if data == "random":
        step = 2**20
        for off in range(0, len(pool), step):
            pool[off : off + step] = os.urandom(min(step, len(pool) - off))
    view = memoryview(pool)
    return pool, [view[i * block_size : (i + 1) * block_size] for i in range(blocks)]


def write(path: str, size: int, block_size: int, data: str = "random", device: bool = False) -> dict:
    """Write `size` bytes in `block_size` blocks, then fsync: both times, from the first write."""
    pool, blocks = data_pool(block_size, data)
    flags = os.O_WRONLY | (0 if device else os.O_CREAT | os.O_TRUNC)
    fd = os.open(path, flags, 0o644)
    try:
        count, moved, started_at = size // block_size, 0, now()
        t0 = time.perf_counter()
        for i in range(count):
            block = blocks[i % len(blocks)]
            n = os.write(fd, block)
            while n < block_size:  # a short write: finish the block, or fail on a full disk
                n += os.write(fd, block[n:])
            moved += n
        t1 = time.perf_counter()
        os.fsync(fd)
        t2 = time.perf_counter()
        st = os.fstat(fd)
    finally:
        os.close(fd)
        for block in blocks:
            block.release()
        pool.close()
    return {
        "bytes": moved,
        "seconds": t1 - t0,
        "seconds_durable": t2 - t0,
        "started_at": started_at,
        "command": f"python: os.write() {count} x {block_size} B of {data} data to {path}, then os.fsync()",
        "file": {"st_dev": st.st_dev, "st_ino": st.st_ino, "size": size if device else st.st_size},
    }


def read(path: str, size: int, block_size: int) -> dict:
    """Read `size` bytes in `block_size` blocks into one reused buffer; first measure how much is cached."""
    buf = mmap.mmap(-1, block_size)
    view = memoryview(buf)
    fd = os.open(path, os.O_RDONLY)
    try:
        cached_before = resident_fraction(fd, size)
        moved, started_at = 0, now()
        t0 = time.perf_counter()
        while moved < size:
            n = os.readv(fd, [view[: min(block_size, size - moved)]])
            if n == 0:
                break
            moved += n
        t1 = time.perf_counter()
    finally:
        os.close(fd)
        view.release()
        buf.close()
    return {
        "bytes": moved,
        "seconds": t1 - t0,
        "seconds_durable": t1 - t0,
        "cached_before": cached_before,
        "started_at": started_at,
        "command": f"python: os.readv() {size // block_size} x {block_size} B from {path}",
    }


def drop_cache(path: str) -> str:
    """Empty the page cache of `path` the strongest way available; returns what was done."""
    os.sync()  # drop_caches only drops clean pages
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        raise PermissionError(f"cache: drop needs root to write /proc/sys/vm/drop_caches ({e.strerror})") from None
    return "sync; posix_fadvise(DONTNEED); echo 3 > /proc/sys/vm/drop_caches"


def resident_fraction(fd: int, length: int) -> float:
    """Fraction (0-1) of the first `length` bytes of open file `fd` that sit in the page cache (mincore(2)).

    Works for block devices too, where fincore(1) sees a size of zero. Asked on the reader's own
    descriptor: a block device's cache is dropped when its last opener closes it.
    """
    if length <= 0:
        return 0.0
    addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap for mincore failed")
    try:
        pages = (length + PAGE - 1) // PAGE
        vec = (ctypes.c_ubyte * pages)()
        if _libc.mincore(addr, length, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return sum(b & 1 for b in bytes(vec)) / pages
    finally:
        _libc.munmap(addr, length)
