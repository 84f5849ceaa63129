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
from array import array
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime

from . import loops
from .latency import Histogram
from .loops import IO, NEVER, run
from .uring import fast_ring

PAGE = mmap.PAGESIZE
# Each stream writes random data from its own pool of this many bytes (or one block, if larger): the block for
# file position p (in blocks) is p modulo the pool's blocks, so no two blocks within POOL_BYTES of each other in
# the file come from the same bytes, whatever the order they are written in, and no compressor working in
# chunks of up to 256 KiB (btrfs's 128 KiB, ZFS's default 128 KiB record) finds a repeat. Small enough to stay
# in the CPU cache: a 16 MiB pool cost ~4 µs per 64 KiB write over one buffer, and writes of 1 MiB reached
# 0.71-0.78 of fio's rate (docs/bench-engines.md); fio reuses one buffer.
POOL_BYTES = 256 * 2**10
# Like fio's scramble_buffers, every STAMP_BYTES of a written block (every block, if smaller) starts with the
# write's byte offset, so that no two 4 KiB pieces a stream writes are alike: a pool that repeats gives a
# deduplicating device nothing to merge (the rest of the piece is the pool's random bytes). Zero data stays zero.
STAMP_BYTES = 4096
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
    # Time-based (io.runtime, seconds): a write stops at this time, or when `size` is written, whichever is first.
    runtime: float = 0.0
    # Blocks each stream moves, where not all `size` of them: a read after a time-based write covers what it wrote,
    # the first counts[i] blocks of stream i's order.
    counts: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return self.size // self.block_size

    def blocks(self, index: int) -> int:
        """How many blocks stream `index` moves."""
        return self.counts[index] if self.counts else self.count

    def deadline(self, now_ns: int) -> int:
        """When a write that starts at perf_counter_ns() `now_ns` must stop (never, without a runtime)."""
        return now_ns + round(self.runtime * 1e9) if self.runtime else NEVER


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


def _buffers(job: Job, reads: int, writes: int) -> tuple[mmap.mmap, int, int]:
    """One page-aligned mapping (fit for O_DIRECT): `reads` blocks to read into, then `writes` blocks of the
    job's data (random: each stream its own bytes) to write from. Returns it and the two parts' addresses."""
    bs = job.block_size
    buf = mmap.mmap(-1, (reads + writes) * bs)
    if job.data == "random":
        step = 2**20
        for off in range(reads * bs, len(buf), step):
            buf[off : off + step] = os.urandom(min(step, len(buf) - off))
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    return buf, base, base + reads * bs


def offsets(job: Job, index: int) -> list[int]:
    """Byte offsets of a stream's blocks in the order they are moved: in turn, or each once at random; in a
    shared file its own blocks only, every job.slots-th from its slot on."""
    stream = job.streams[index]
    order = list(range(job.count))
    if job.pattern == "rand":
        random.Random(job.seed * 1009 + index).shuffle(order)
    return [stream.offset + (k * job.slots + stream.slot) * job.block_size for k in order[: job.blocks(index)]]


def extent(job: Job, index: int) -> int:
    """Where stream `index`'s last block ends in its file (or on the device): how far a reader needs it to reach.
    Worked out, not drawn: only a random order cut short (job.counts) needs its offsets."""
    if job.pattern == "rand" and job.counts:
        return max(offsets(job, index), default=job.streams[index].offset - job.block_size) + job.block_size
    stream = job.streams[index]
    return stream.offset + ((job.blocks(index) - 1) * job.slots + stream.slot + 1) * job.block_size


def _open(stream: Stream, job: Job, op: str) -> int:
    flags = {"write": os.O_WRONLY, "read": os.O_RDONLY, "mixed": os.O_RDWR}[op]
    if op == "write" and not stream.device:
        # A shared file is written by every stream at once: none may truncate what another wrote.
        flags |= os.O_CREAT | (os.O_TRUNC if job.slots == 1 else 0)
    if job.direct:
        flags |= os.O_DIRECT
    return os.open(stream.path, flags, 0o644)


def _stream_result(stream: Stream, nbytes: int, start: float, end: float, end_durable: float, latency, **more) -> dict:
    """What one stream did, as aggregate() takes it: where, how much, when (epoch seconds), and each call's time."""
    return more | {
        "path": stream.path,
        "offset": stream.offset,
        "bytes": nbytes,
        "start": start,
        "end": end,
        "end_durable": end_durable,
        "ops": latency.count,
        "latency": latency.as_record(),
    }


def _stopped(job: Job, ops: int, planned: int) -> dict:
    """What ended a time-based write: the time, or io.size reached first (nothing for a size-based one)."""
    return {"stopped_by": "runtime" if ops < planned else "size"} if job.runtime else {}


def stream(job: Job, index: int, op: str, start_line: threading.Barrier, done, reads: bytes | None = None) -> dict:
    """Stream `index` of `job`: op "write", "read" or "mixed" (operation i reads where reads[i], else writes).

    Its blocks are moved by the C loop (loops.c): one call at a time (pread/pwrite) at depth 1, job.iodepth in
    flight through io_uring deeper, each call timed into a latency.Histogram. Writes are flushed (fsync) when
    all have completed, inside their durable time. Returns {op: stream result} for each of "write" and "read"
    that it did (a mix both, each over the mix's wall time).
    """
    s, bs, depth = job.streams[index], job.block_size, job.iodepth
    where = offsets(job, index)
    reading, writing = op != "write", op != "read"
    # Lane l (one I/O in flight at a time) writes offset o from block l + depth * (o / bs % turns): a buffer is
    # never stamped while the kernel still reads it, and no two blocks within POOL_BYTES of each other in the
    # file come from the same bytes.
    turns = -(-POOL_BYTES // bs) if writing else 0
    buf, read_at, write_at = _buffers(job, depth if reading else 0, depth * turns)
    order = array("q", where)
    hist = [Histogram(), Histogram()]  # writes, reads
    io = IO(
        offsets=order.buffer_info()[0] if where else None,
        read_buffers=read_at,
        write_buffers=write_at,
        done=ctypes.addressof(done) + 8 * index,
        count=len(where),
        block_size=bs,
        write_turns=max(turns, 1),
        stamp_every=min(STAMP_BYTES, bs) if job.data == "random" and bs >= 8 else 0,
        fd=_open(s, job, op),
        depth=depth,
        read_all=op == "read",
        strict=op == "mixed",
        repeat=op == "mixed" and bool(job.runtime),
    )
    io.counts[0], io.counts[1] = (h.counts.buffer_info()[0] for h in hist)
    which = ctypes.create_string_buffer(reads, len(reads)) if reads is not None else None
    io.reads = ctypes.addressof(which) if which is not None else None
    try:
        if op == "write" and job.pattern == "rand" and not s.device:
            os.ftruncate(io.fd, job.size * job.slots)  # a shared file: all of it, by every stream alike
        with fast_ring(depth) if depth > 1 else nullcontext() as ring:
            for name, address in ring.layout.items() if ring else ():
                setattr(io, name, address)
            start_line.wait()
            start = _clock()
            step = io.clock_step_ns = loops.CLOCK_STEP_NS
            io.deadline_ns = job.deadline(step or time.perf_counter_ns()) if writing else NEVER
            try:
                out = run(io)
            finally:
                if ring:
                    ring.resync()  # the C loop moved its heads and tails: close() waits for what is in flight
            end = end_durable = _clock()
            if out.error:
                raise _failure(out, s, bs)
            if writing:
                os.fsync(io.fd)
                end_durable = _clock()
    finally:
        os.close(io.fd)
        buf.close()
    more = {"iodepth": depth} if depth > 1 else {}
    results = {}
    for k, name in enumerate(("write", "read")):
        if (name == "read" and reading) or (name == "write" and writing):
            h = hist[k]
            h.count, h.total_ns, h.max_ns = out.ops[k], out.total_ns[k], out.longest_ns[k]
            stopped = _stopped(job, h.count, len(where)) if op == "write" else {}
            durable = end_durable if name == "write" else end
            results[name] = _stream_result(s, out.moved[k], start, end, durable, h, **more, **stopped)
    return results


def _failure(out, s: Stream, bs: int) -> OSError:
    """The C loop's first failure, named: the call, where, and why."""
    op = "read" if out.error_read else "write"
    why = os.strerror(out.error)
    if out.enter_failed:
        return OSError(out.error, f"io_uring_enter on {s.path}: {why}")
    if out.short_result >= 0:
        what = f"short {op} of {out.short_result} of {bs} bytes at byte {out.error_offset} of {s.path}"
        return OSError(out.error, what if out.error == errno.EIO else f"{what}: {why}")
    return OSError(out.error, f"{op} at byte {out.error_offset} of {s.path}: {why}")


def _run(job: Job, op: str, one_stream, every: float) -> list[dict]:
    """Run `one_stream(index, start_line, done)` for every stream at once, in threads (the syscalls release
    the GIL), while a reporter logs the progress the streams count in `done`."""
    start_line = threading.Barrier(len(job.streams))
    done = (ctypes.c_int64 * len(job.streams))()  # each stream's bytes so far, counted by the C loop
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
    call = "pwrite(2)" if op == "write" else "pread(2)"
    if job.iodepth > 1:
        call = f"io_uring IORING_OP_{op.upper()}, {job.iodepth} in flight,"
    how = f"{job.pattern}, {'O_DIRECT' if job.direct else 'buffered'}" + (", then os.fsync()" if op == "write" else "")
    where = ", ".join(dict.fromkeys(s.path + (f"@{s.offset}" if s.offset else "") for s in job.streams))
    if job.slots > 1:
        where += f" (shared: stream s moves blocks s, s+{job.slots}, s+{2 * job.slots}, ... of it)"
    data = f" of {job.data} data" if op == "write" else ""
    streams = f"{len(job.streams)} stream(s)"
    count = f"{job.count} x" if not job.counts else f"{'/'.join(map(str, job.counts))} (what the write moved) x"
    if op == "write" and job.runtime:
        count = f"for {job.runtime:g} s, at most {job.count} x"
    return f"python: {call} {count} {job.block_size} B{data} per stream ({how}), {streams}: {where}"


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write every stream (timing the flush too: the durable figure); one figure over all streams."""
    streams = _run(job, "write", lambda i, line, done: stream(job, i, "write", line, done)["write"], every)
    return aggregate(streams, _describe(job, "write"))


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read every stream into one reused buffer each (one per I/O in flight); one figure over all streams."""
    streams = _run(job, "read", lambda i, line, done: stream(job, i, "read", line, done)["read"], every)
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
