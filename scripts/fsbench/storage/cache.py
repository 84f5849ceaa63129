"""The page cache between a write and its read: emptied (drop_caches, fadvise) and measured (mincore), so a
read's `cached_before` is a fact, not a hope."""

import ctypes
import mmap
import os

PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def drop_cache(paths: list[str]) -> None:
    """sync, drop each file's pages (fadvise), then the whole page cache (needs root)."""
    fadvise_cache(paths)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        raise PermissionError(f"cache: drop needs root to write /proc/sys/vm/drop_caches ({e.strerror})") from None


def fadvise_cache(paths: list[str]) -> None:
    """Flush, then ask the kernel to drop each file's clean pages (a hint; any user may give it)."""
    os.sync()  # only clean pages can be dropped
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_fraction(path: str, length: int, offset: int = 0) -> float:
    """Fraction (0-1) of `length` bytes of `path` from `offset` that sit in the page cache (mincore(2)).

    Works for block devices too, where fincore(1) sees a size of zero (a block device's cache is
    also dropped when its last opener closes it, so a device is cold unless someone holds it open).
    """
    if length <= 0:
        return 0.0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap of {path} for mincore failed")
        try:
            pages = (length + PAGE - 1) // PAGE
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, length, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore on {path} failed")
            return sum(b & 1 for b in bytes(vec)) / pages
        finally:
            _libc.munmap(addr, length)
    finally:
        os.close(fd)
