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
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

import numpy

from .latency import SUB, SUB_BITS, Histogram

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

_U64 = struct.Struct("<Q")
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
        return now_ns + round(self.runtime * 1e9) if self.runtime else 1 << 63


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


class DataPool:
    """One stream's write data: a page-aligned buffer (fit for O_DIRECT) of random or zero bytes in `blocks`,
    block-sized slices, and `stamps[i](offset)` writing the offset into block i (None for zero data)."""

    def __init__(self, block_size: int, data: str, count: int | None = None):
        count = count or max(POOL_BYTES // block_size, 1)
        self._mmap = mmap.mmap(-1, count * block_size)
        if data == "random":
            step = 2**20
            for off in range(0, len(self._mmap), step):
                self._mmap[off : off + step] = os.urandom(min(step, len(self._mmap) - off))
        view = memoryview(self._mmap)
        self.blocks = [view[i * block_size : (i + 1) * block_size] for i in range(count)]
        self.stamps = None
        self._words = None
        if data == "random" and block_size >= 8:
            every = min(STAMP_BYTES, block_size)
            if block_size <= every:  # one stamp a block: struct is cheaper than a numpy call
                self.stamps = [partial(_U64.pack_into, self._mmap, i * block_size) for i in range(count)]
            else:  # the first word of every STAMP_BYTES of the block, set by one numpy fill
                self._words = numpy.frombuffer(self._mmap, dtype="<u8")
                per = block_size // 8
                self.stamps = [self._words[i * per : (i + 1) * per : every // 8].fill for i in range(count)]

    def close(self) -> None:
        """Let go of the buffer: it is unmapped when the last view (numpy's stamps too) is gone."""
        for block in self.blocks:
            block.release()
        self.blocks, self.stamps, self._words, self._mmap = [], None, None, None


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


def _open(stream: Stream, job: Job, writing: bool) -> int:
    flags = os.O_WRONLY if writing else os.O_RDONLY
    if writing and not stream.device:
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


# Latency bookkeeping, the same in every loop below, written out in the loop because a function call per
# operation costs ~0.25 µs: one clock read per operation (perf_counter_ns), whose value ends this operation's
# latency and starts the next one's, and latency.Histogram's counters updated in place (`counts[...]` is
# latency.bucket(d), inlined; tests check the two agree). Measured here: 0.73 µs per operation against 1.11 for
# two clock reads and Histogram.record() (docs/bench-engines.md). So a latency at depth 1 is the call plus the
# loop's own work between two calls (its bookkeeping, picking the next offset and block, a write's stamp):
# ~1 µs, a few % of a 4 KiB call here. Its sum over a stream is the stream's time, start to last call's end.


def _finish(latency: Histogram, ops: int, total: int, longest: int) -> Histogram:
    latency.count, latency.total_ns, latency.max_ns = ops, total, longest
    return latency


def _write_stream(job: Job, index: int, start_line: threading.Barrier, done: list) -> dict:
    stream, bs = job.streams[index], job.block_size
    where = offsets(job, index)
    pool = DataPool(bs, job.data)  # each stream its own random bytes
    blocks, stamps, nblocks = pool.blocks, pool.stamps, len(pool.blocks)
    fd = _open(stream, job, writing=True)
    try:
        if job.pattern == "rand" and not stream.device:
            os.ftruncate(fd, job.size * job.slots)  # a shared file: all of it, by every stream alike
        latency, ns, pwrite = Histogram(), time.perf_counter_ns, os.pwrite
        counts, total, longest, ops = latency.counts, 0, 0, 0
        start_line.wait()
        start = _clock()
        last = ns()
        deadline = job.deadline(last)
        for off in where:
            b = off // bs % nblocks
            if stamps:
                stamps[b](off)
            block = blocks[b]
            n = pwrite(fd, block, off)
            while n < bs:  # a short write: finish the block, or fail on a full disk
                n += pwrite(fd, block[n:], off + n)
            now = ns()
            d, last = now - last, now
            shift = d.bit_length() - SUB_BITS - 1
            counts[((shift + 1) << SUB_BITS) + (d >> shift) - SUB if shift > 0 else d] += 1
            total += d
            if d > longest:
                longest = d
            ops += 1
            done[index] += n
            if now >= deadline:
                break
        end = _clock()
        os.fsync(fd)
        end_durable = _clock()
    finally:
        os.close(fd)
        pool.close()
    latency = _finish(latency, ops, total, longest)
    return _stream_result(stream, done[index], start, end, end_durable, latency, **_stopped(job, ops, len(where)))


def _stopped(job: Job, ops: int, planned: int) -> dict:
    """What ended a time-based write: the time, or io.size reached first (nothing for a size-based one)."""
    return {"stopped_by": "runtime" if ops < planned else "size"} if job.runtime else {}


def _read_stream(job: Job, index: int, start_line: threading.Barrier, done: list) -> dict:
    stream, bs = job.streams[index], job.block_size
    where = offsets(job, index)
    buf = mmap.mmap(-1, bs)
    view = memoryview(buf)
    # In order: read(2) into our buffer via FileIO.readinto (measured here, preadv(2) is up to 15 % slower for
    # O_DIRECT at 64 KiB, its iovec path; Python has no pread-into). At random: preadv(2), one call where a seek
    # and a read would be two.
    f = os.fdopen(_open(stream, job, writing=False), "rb", buffering=0)
    latency, ns = Histogram(), time.perf_counter_ns
    counts, total, longest, ops, moved = latency.counts, 0, 0, 0, 0
    readinto, preadv, fd, bufs = f.readinto, os.preadv, f.fileno(), [view]
    try:
        start_line.wait()
        start = _clock()
        last = ns()
        if job.pattern == "rand":
            for off in where:
                n = preadv(fd, bufs, off)
                if not n:
                    break
                now = ns()
                d, last = now - last, now
                shift = d.bit_length() - SUB_BITS - 1
                counts[((shift + 1) << SUB_BITS) + (d >> shift) - SUB if shift > 0 else d] += 1
                total += d
                if d > longest:
                    longest = d
                ops += 1
                moved += n
                done[index] = moved
        else:
            pos = None
            for off in where:
                if off != pos:
                    f.seek(off)
                n = readinto(view)
                if not n:
                    break
                now = ns()
                d, last = now - last, now
                shift = d.bit_length() - SUB_BITS - 1
                counts[((shift + 1) << SUB_BITS) + (d >> shift) - SUB if shift > 0 else d] += 1
                total += d
                if d > longest:
                    longest = d
                ops += 1
                moved += n
                done[index] = moved
                pos = off + n
        end = _clock()
    finally:
        f.close()
        view.release()
        buf.close()
    return _stream_result(stream, moved, start, end, end, _finish(latency, ops, total, longest))


def _uring_stream(job: Job, index: int, writing: bool, start_line: threading.Barrier, done: list) -> dict:
    """One stream with job.iodepth I/Os always in flight (io_uring): as one completes, the next is queued.

    Work is done per reaped batch where it can be: one clock read per batch (not per I/O), so a call's latency
    runs from the clock read before the submission that sent it (its batch's, or the start's) to the one after
    the wait that reaped it, and also holds the loop's work on the rest of those batches; completions are
    read as two lists and the next I/Os queued in one call. Writes are flushed (fsync) once all have
    completed, as with one call at a time.
    """
    from .uring import buffer_address, check, fast_ring

    stream, bs, depth = job.streams[index], job.block_size, job.iodepth
    where = offsets(job, index)
    n = planned = len(where)
    op = "write" if writing else "read"
    # Slot s (one I/O in flight at a time) owns buffers s + depth * t, t < turns: a buffer is never stamped or
    # read into while the kernel still uses it. A write at file position p (in blocks) takes t = p modulo turns,
    # so, as at depth 1, no two blocks within POOL_BYTES of each other in the file come from the same buffer.
    turns = -(-POOL_BYTES // bs) if writing else 1
    pool = DataPool(bs, job.data if writing else "zero", depth * turns)
    address = [buffer_address(b) for b in pool.blocks]
    stamps = pool.stamps if writing else None
    fd = _open(stream, job, writing)
    latency, ns, queued_at = Histogram(), time.perf_counter_ns, [0] * depth
    counts, total, longest, ops, moved = latency.counts, 0, 0, 0, 0
    try:
        with fast_ring(depth) as ring:
            if writing and job.pattern == "rand" and not stream.device:
                os.ftruncate(fd, job.size * job.slots)  # a shared file: all of it, by every stream alike
            ring.fix_slots(op, fd, bs, address[:depth])
            queue_many, reap, submit_and_wait = ring.queue_many, ring.reap, ring.submit_and_wait
            first = list(range(min(depth, n)))
            bufs = [slot + depth * (where[slot] // bs % turns) for slot in first]
            if stamps:
                for buf, off in zip(bufs, where, strict=False):
                    stamps[buf](off)
            start_line.wait()
            start = _clock()
            now = ns()
            deadline = job.deadline(now) if writing else 1 << 63
            queue_many(first, where[: len(first)], [address[buf] for buf in bufs])
            for slot in first:
                queued_at[slot] = now
            k = in_flight = len(first)
            while in_flight:
                submit_and_wait(1)
                now = ns()
                slots, results = reap()
                got = len(slots)
                ops += got
                moved += got * bs
                if results.count(bs) != got:  # an error, a short transfer, or a read past the end
                    for res in results:
                        if res != bs:
                            check(res, f"{op} of {stream.path}")
                            if writing:  # a short write leaves the block unfinished: the device is full
                                raise OSError(errno.ENOSPC, f"short write of {stream.path}: {res} of {bs} bytes")
                            moved += res - bs
                            ops -= not res  # a read past the end moves nothing: no operation (as at depth 1)
                    slots_timed = [s for s, res in zip(slots, results, strict=True) if res]
                else:
                    slots_timed = slots
                # Latency, bucketed as latency.bucket() (see above): I/Os queued in one batch and reaped in
                # another share their latency, so the bucket is worked out once for each run of them.
                last_q = -1
                for q in map(queued_at.__getitem__, slots_timed):
                    if q != last_q:
                        last_q, d = q, now - q
                        shift = d.bit_length() - SUB_BITS - 1
                        b = ((shift + 1) << SUB_BITS) + (d >> shift) - SUB if shift > 0 else d
                        if d > longest:
                            longest = d
                    counts[b] += 1
                    total += d
                if now >= deadline:  # time-based: queue no more, let what is in flight complete
                    n = k
                more = min(got, n - k)
                if more:
                    slots = slots[:more] if more < got else slots
                    offs = where[k : k + more]
                    if stamps:
                        bufs = [slot + depth * (off // bs % turns) for slot, off in zip(slots, offs, strict=True)]
                        for buf, off in zip(bufs, offs, strict=True):
                            stamps[buf](off)
                        queue_many(slots, offs, [address[buf] for buf in bufs])
                    else:
                        queue_many(slots, offs)
                    for slot in slots:
                        queued_at[slot] = now
                    k += more
                in_flight -= got - more
                done[index] = moved
            end = _clock()
            end_durable = end
            if writing:
                os.fsync(fd)
                end_durable = _clock()
    finally:
        os.close(fd)
        pool.close()
    latency = _finish(latency, ops, total, longest)
    stopped = _stopped(job, ops, planned) if writing else {}
    return _stream_result(stream, moved, start, end, end_durable, latency, iodepth=depth, **stopped)


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
    count = f"{job.count} x" if not job.counts else f"{'/'.join(map(str, job.counts))} (what the write moved) x"
    if op == "write" and job.runtime:
        count = f"for {job.runtime:g} s, at most {job.count} x"
    return f"python: {call} {count} {job.block_size} B{data} per stream ({how}), {streams}: {where}"


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write every stream (timing the flush too: the durable figure); one figure over all streams."""
    if job.iodepth > 1:
        streams = _run(job, "write", lambda i, line, done: _uring_stream(job, i, True, line, done), every)
    else:
        streams = _run(job, "write", lambda i, line, done: _write_stream(job, i, line, done), every)
    return aggregate(streams, _describe(job, "write"))


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read every stream into one reused buffer each (one per I/O in flight); one figure over all streams."""
    if job.iodepth > 1:
        streams = _run(job, "read", lambda i, line, done: _uring_stream(job, i, False, line, done), every)
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
