"""The python I/O engine and the cold-read machinery shared by all engines.

Writes time the flush too (the durable figure); reads start from a cache that
was emptied and then measured, so a read's `cached_before` is a fact, not a hope.
"""

import ctypes
import errno
import logging
import mmap
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from .latency import Histogram

PAGE = mmap.PAGESIZE
# Random data is drawn once into a pool this large and written in turn: no compressor or
# deduplicating device sees a repeat within 16 MiB, and no block is allocated per write.
POOL_BYTES = 16 * 2**20
PROGRESS_SECONDS = 10.0
log = logging.getLogger("fsbench")

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
    slot: int = 0  # its place among the streams sharing one file (Job.slots)


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
    iodepth: int = 1  # I/Os in flight per stream: 1 is one call at a time, more go through io_uring
    # Streams sharing one file (shared_file, IOR's N-1): stream slot s moves blocks s, s + slots, s + 2 slots, ...
    # of it, disjoint and interleaved; 1: each stream has its own file (or region).
    slots: int = 1

    @property
    def count(self) -> int:
        return self.size // self.block_size


def aggregate(streams: list[dict], command: str) -> dict:
    """Many streams as one figure: total bytes over the time from the first start to the last end.

    Each stream dict has bytes and the wall-clock (epoch seconds) start, end and end_durable; `ops` (the
    I/O calls it made) where the engine counts them, and `latency` (a latency.Histogram record) where it
    times each one: merged over the streams into the latency columns.
    """
    start = min(s["start"] for s in streams)
    merged = Histogram()
    for s in streams:
        if "latency" in s:
            merged.merge(Histogram.from_record(s["latency"]))
    return {
        "bytes": sum(s["bytes"] for s in streams),
        "seconds": max(s["end"] for s in streams) - start,
        "seconds_durable": max(s["end_durable"] for s in streams) - start,
        "started_at": datetime.fromtimestamp(start, UTC).isoformat(timespec="microseconds"),
        "ops": sum(s["ops"] for s in streams) if all("ops" in s for s in streams) else float("nan"),
        **merged.summary(),
        "command": command,
        "streams": streams,
    }


# Durations come from the monotonic clock; this anchors them to wall time so streams can be compared.
_ANCHOR = time.time() - time.perf_counter()


def _clock() -> float:
    return _ANCHOR + time.perf_counter()


def data_pool(block_size: int, data: str) -> tuple[mmap.mmap, list[memoryview]]:
    """A page-aligned buffer (fit for O_DIRECT) of random or zero bytes, and its block-sized slices."""
    blocks = max(1, POOL_BYTES // block_size)
    pool = mmap.mmap(-1, blocks * block_size)
    if data == "random":
        step = 2**20
        for off in range(0, len(pool), step):
            pool[off : off + step] = os.urandom(min(step, len(pool) - off))
    view = memoryview(pool)
    return pool, [view[i * block_size : (i + 1) * block_size] for i in range(blocks)]


def offsets(job: Job, index: int) -> list[int]:
    """Byte offsets of a stream's blocks in the order they are moved: in turn, or each once at random; in a
    shared file its own blocks only, every job.slots-th from its slot on."""
    stream = job.streams[index]
    order = list(range(job.count))
    if job.pattern == "rand":
        random.Random(job.seed * 1009 + index).shuffle(order)
    return [stream.offset + (k * job.slots + stream.slot) * job.block_size for k in order]


def _open(stream: Stream, job: Job, writing: bool) -> int:
    flags = os.O_WRONLY if writing else os.O_RDONLY
    if writing and not stream.device:
        # A shared file is written by every stream at once: none may truncate what another wrote.
        flags |= os.O_CREAT | (os.O_TRUNC if job.slots == 1 else 0)
    if job.direct:
        flags |= os.O_DIRECT
    return os.open(stream.path, flags, 0o644)


def _stream_result(stream: Stream, nbytes: int, start: float, end: float, end_durable: float, latency) -> dict:
    """What one stream did, as aggregate() takes it: where, how much, when (epoch seconds), and each call's time."""
    return {
        "path": stream.path,
        "offset": stream.offset,
        "bytes": nbytes,
        "start": start,
        "end": end,
        "end_durable": end_durable,
        "ops": latency.count,
        "latency": latency.as_record(),
    }


def _write_stream(job: Job, index: int, blocks: list[memoryview], start_line: threading.Barrier, done: list) -> dict:
    stream, bs = job.streams[index], job.block_size
    where = offsets(job, index)
    first = index * len(blocks) // len(job.streams)  # streams write different data
    fd = _open(stream, job, writing=True)
    try:
        if job.pattern == "rand" and not stream.device:
            os.ftruncate(fd, job.size * job.slots)  # a shared file: all of it, by every stream alike
        latency, ns = Histogram(), time.perf_counter_ns
        start_line.wait()
        start = _clock()
        for k, off in enumerate(where):
            block = blocks[(first + k) % len(blocks)]
            t0 = ns()
            n = os.pwrite(fd, block, off)
            while n < bs:  # a short write: finish the block, or fail on a full disk
                n += os.pwrite(fd, block[n:], off + n)
            latency.record(ns() - t0)
            done[index] += n
        end = _clock()
        os.fsync(fd)
        end_durable = _clock()
    finally:
        os.close(fd)
    return _stream_result(stream, done[index], start, end, end_durable, latency)


def _read_stream(job: Job, index: int, start_line: threading.Barrier, done: list) -> dict:
    stream, bs = job.streams[index], job.block_size
    where = offsets(job, index)
    buf = mmap.mmap(-1, bs)
    view = memoryview(buf)
    # read(2) into our buffer via FileIO.readinto, seeking only when the order jumps: measured here,
    # preadv(2) is up to 15 % slower for O_DIRECT at 64 KiB (its iovec path), and Python has no pread-into.
    f = os.fdopen(_open(stream, job, writing=False), "rb", buffering=0)
    latency, ns = Histogram(), time.perf_counter_ns
    try:
        start_line.wait()
        start = _clock()
        pos = None
        for off in where:
            t0 = ns()
            if off != pos:
                f.seek(off)
            n = f.readinto(view)
            if not n:
                break
            latency.record(ns() - t0)
            done[index] += n
            pos = off + n
        end = _clock()
    finally:
        f.close()
        view.release()
        buf.close()
    return _stream_result(stream, done[index], start, end, end, latency)


def _uring_stream(job: Job, index: int, writing: bool, blocks: list, start_line: threading.Barrier, done: list) -> dict:
    """One stream with job.iodepth I/Os always in flight (io_uring): as one completes, the next is queued.

    A call's latency runs from when it was queued to when its completion was reaped; writes are flushed
    (fsync) once all have completed, as with one call at a time.
    """
    from .uring import Ring, buffer_address, check

    stream, bs, depth = job.streams[index], job.block_size, job.iodepth
    where, n = offsets(job, index), job.count
    op = "write" if writing else "read"
    if writing:
        first = index * len(blocks) // len(job.streams)  # streams write different data
        data = [buffer_address(b) for b in blocks]
        address = [data[(first + k) % len(data)] for k in range(min(n, len(data)))]
    else:
        slots_buf = mmap.mmap(-1, depth * bs)  # one page-aligned buffer per slot in flight
        address = [buffer_address(slots_buf) + slot * bs for slot in range(depth)]
    fd = _open(stream, job, writing)
    latency, ns, queued_at = Histogram(), time.perf_counter_ns, [0] * depth
    try:
        with Ring(depth) as ring:
            if writing and job.pattern == "rand" and not stream.device:
                os.ftruncate(fd, job.size * job.slots)  # a shared file: all of it, by every stream alike
            prep, submit_and_wait, completions = ring.prep, ring.submit_and_wait, ring.completions
            record = latency.record
            free, k, in_flight = list(range(depth)), 0, 0
            start_line.wait()
            start = _clock()
            while k < n or in_flight:
                while free and k < n:
                    slot = free.pop()
                    buf = address[k % len(address)] if writing else address[slot]
                    queued_at[slot] = ns()
                    prep(op, fd, buf, bs, where[k], slot)
                    k += 1
                    in_flight += 1
                submit_and_wait(1)
                now = ns()
                for slot, res in completions():
                    if res != bs:
                        check(res, f"{op} of {stream.path}")
                        if writing:  # a short write leaves the block unfinished: the device is full
                            raise OSError(errno.ENOSPC, f"short write of {stream.path}: {res} of {bs} bytes")
                    if res:  # a read past the end moves nothing: no operation (as at depth 1)
                        record(now - queued_at[slot])
                    done[index] += res
                    in_flight -= 1
                    free.append(slot)
            end = _clock()
            end_durable = end
            if writing:
                os.fsync(fd)
                end_durable = _clock()
    finally:
        os.close(fd)
        if not writing:
            slots_buf.close()
    return _stream_result(stream, done[index], start, end, end_durable, latency) | {"iodepth": depth}


def _run(job: Job, op: str, one_stream, every: float) -> list[dict]:
    """Run `one_stream(index, start_line, done)` for every stream at once, in threads (the syscalls release
    the GIL), while a reporter logs the progress the streams count in `done`."""
    start_line = threading.Barrier(len(job.streams))
    done = [0] * len(job.streams)
    with progress(op, job.size * len(job.streams), done, every):
        if len(job.streams) == 1:
            return [one_stream(0, start_line, done)]
        with ThreadPoolExecutor(len(job.streams)) as pool:
            futures = [pool.submit(one_stream, i, start_line, done) for i in range(len(job.streams))]
            try:
                return [f.result() for f in futures]
            except BaseException:
                start_line.abort()  # a stream that failed to open must not leave the others waiting
                raise


@contextmanager
def progress(op: str, total: int, done: list[int] | Callable[[], int], every: float = PROGRESS_SECONDS):
    """Log bytes moved, rate and time left every `every` seconds while the body runs (for long runs).

    `done` is either the per-stream byte counts the streams keep up to date (the python engine), or a
    function that says how many bytes have been moved so far (a ChildBytes, for dd and fio).
    """
    moved_so_far = done if callable(done) else lambda: sum(done)
    stop = threading.Event()
    started = time.perf_counter()

    def report():
        while not stop.wait(every):
            moved, elapsed = min(moved_so_far(), total), time.perf_counter() - started
            rate = moved / elapsed
            eta = (total - moved) / rate if rate else float("inf")
            log.info(
                "%s: %d of %d bytes (%.0f %%), %.0f MB/s, about %.0f s left",
                op,
                moved,
                total,
                100 * moved / total,
                rate / 1e6,
                eta,
            )

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        yield
    finally:
        stop.set()
        reporter.join()


class ChildBytes:
    """Bytes that child processes (dd, fio) have moved so far, as the kernel counts them in /proc/<pid>/io.

    Chosen over dd's status=progress and fio's --status-interval because it asks nothing of the tool: the
    command line, dd's closing lines and fio's JSON stay exactly as they were, the child does no extra
    work, and the reporter thread's poll (one small read of /proc per child) is the same for every engine.
    wchar (writes) and rchar (reads) count what the process's write(2)/read(2)-family calls moved, page
    cache or O_DIRECT alike, summed over all its threads (fio runs its jobs as threads: `thread` in its
    job file). They also count a tool's own small I/O (libraries, dd's closing lines, fio's job file and
    report: a few KiB for dd, ~60 KiB for fio), so each child is capped at its share, and a count never
    goes down.
    """

    def __init__(self, op: str):
        self.field = b"wchar:" if op == "write" else b"rchar:"
        self._children: list[list] = []  # [Popen, share, /proc/<pid> folder fd or None, bytes seen]

    def watch(self, proc: subprocess.Popen, share: int) -> None:
        """Count `proc`, started and not yet waited for, up to `share` bytes."""
        try:
            # The folder, held open, stays this process's even if its pid is reused after it is reaped.
            folder = os.open(f"/proc/{proc.pid}", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            folder = None
        self._children.append([proc, share, folder, 0])  # one append: the reporter sees all of it or none

    def _now(self, proc: subprocess.Popen, share: int, folder: int | None) -> int:
        if folder is not None:
            try:
                fd = os.open("io", os.O_RDONLY, dir_fd=folder)
                try:
                    text = os.read(fd, 4096)
                finally:
                    os.close(fd)
                for line in text.splitlines():
                    if line.startswith(self.field):
                        return int(line.split()[1])
            except (OSError, ValueError):
                pass
        # Gone (already waited for) or unreadable: a child that exited cleanly moved its whole share.
        return share if proc.returncode == 0 else 0

    def __call__(self) -> int:
        for child in list(self._children):
            proc, share, folder, seen = child
            child[3] = max(seen, min(share, self._now(proc, share, folder)))
        return sum(child[3] for child in self._children)

    def close(self) -> None:
        for child in self._children:
            if child[2] is not None:
                os.close(child[2])
                child[2] = None

    def __enter__(self) -> "ChildBytes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _describe(job: Job, op: str) -> str:
    call = "os.pwrite()" if op == "write" else "read() via FileIO.readinto"
    if job.iodepth > 1:
        call = f"io_uring IORING_OP_{op.upper()}, {job.iodepth} in flight,"
    how = f"{job.pattern}, {'O_DIRECT' if job.direct else 'buffered'}" + (", then os.fsync()" if op == "write" else "")
    where = ", ".join(dict.fromkeys(s.path + (f"@{s.offset}" if s.offset else "") for s in job.streams))
    if job.slots > 1:
        where += f" (shared: stream s moves blocks s, s+{job.slots}, s+{2 * job.slots}, ... of it)"
    data = f" of {job.data} data" if op == "write" else ""
    streams = f"{len(job.streams)} stream(s)"
    return f"python: {call} {job.count} x {job.block_size} B{data} per stream ({how}), {streams}: {where}"


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write every stream (timing the flush too: the durable figure); one figure over all streams."""
    pool, blocks = data_pool(job.block_size, job.data)
    try:
        if job.iodepth > 1:
            streams = _run(job, "write", lambda i, line, done: _uring_stream(job, i, True, blocks, line, done), every)
        else:
            streams = _run(job, "write", lambda i, line, done: _write_stream(job, i, blocks, line, done), every)
    finally:
        for block in blocks:
            block.release()
        pool.close()
    return aggregate(streams, _describe(job, "write"))


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read every stream into one reused buffer each; one figure over all streams."""
    if job.iodepth > 1:
        streams = _run(job, "read", lambda i, line, done: _uring_stream(job, i, False, [], line, done), every)
    else:
        streams = _run(job, "read", lambda i, line, done: _read_stream(job, i, line, done), every)
    return aggregate(streams, _describe(job, "read"))


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
