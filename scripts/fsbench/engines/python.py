"""The python engine: each stream set up in Python (file, block order, buffers, io_uring ring), its blocks moved
by the C loop (loops.c), writes flushed inside their durable time; one figure over all streams (job.aggregate).
"""

import ctypes
import errno
import mmap
import os
import threading
import time
from array import array
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import nullcontext

from fsbench.engines import loops, verify
from fsbench.engines.job import PROGRESS_SECONDS, TIME, TIME_OR_SIZE, Job, Stream, aggregate, offsets, progress
from fsbench.engines.loops import IO, run
from fsbench.engines.uring import buffer_address, fast_ring
from fsbench.toolkit import timeseries
from fsbench.toolkit.latency import Histogram
from fsbench.toolkit.system import on_cpu

# Each stream writes random data from its own pool of this many bytes (or one block, if larger): the block for
# file position p (in blocks) is p modulo the pool's blocks, so no two blocks within POOL_BYTES of each other in
# the file come from the same bytes, whatever the order they are written in, and no compressor working in
# chunks of up to 256 KiB (btrfs's 128 KiB, ZFS's default 128 KiB record) finds a repeat. Small enough to stay
# in the CPU cache: a 16 MiB pool cost ~4 µs per 64 KiB write over one buffer, and writes of 1 MiB reached
# 0.71-0.78 of fio's rate (measured here; see docs/bench-engines.md's history); fio reuses one buffer.
POOL_BYTES = 256 * 2**10
# Like fio's scramble_buffers, every STAMP_BYTES of a written block (every block, if smaller) starts with the
# write's byte offset, so that no two 4 KiB pieces a stream writes are alike: a pool that repeats gives a
# deduplicating device nothing to merge (the rest of the piece is the pool's random bytes). Zero data stays zero.
STAMP_BYTES = 4096
HUGE_PAGE = 2**21  # x86-64's and arm64's (4 KiB base pages) transparent huge page

# Durations come from the monotonic clock; this anchors them to wall time so streams can be compared.
_ANCHOR = time.time() - time.perf_counter()


def _clock() -> float:
    return _ANCHOR + time.perf_counter()


def _buffers(job: Job, reads: int, writes: int, signature: int | None = None) -> tuple[mmap.mmap, int, int]:
    """One page-aligned mapping (fit for O_DIRECT): `reads` blocks to read into, then `writes` blocks of the
    job's data (random: each stream its own bytes) to write from. Returns it and the two parts' addresses.

    Private memory, as fio's (mmap's default, MAP_SHARED, is shmem), in 4 KiB pages by default (job.buffer page),
    as fio's and IOR's malloc'd buffers are on a machine whose transparent huge pages are `madvise` (the usual
    setting), and whatever the machine's setting: an O_DIRECT call of 1 MiB then reaches a loop device as two
    requests or so (the queue takes 128 segments; 256 scattered pages make two), as theirs do. With job.buffer
    hugepage, aligned to and asking for huge pages: a block within one is physically contiguous, so such a call is
    one request, a steadier shape than applications send. Every page is touched here, outside the measured time.
    Verified (a `signature`): the data is the signature's pool (fsbench.engines.verify), its headers' constant
    words stamped, each lane's copy alike (loops.c's check compares a read with lane 0's).
    """
    bs = job.block_size
    size = (reads + writes) * bs
    huge = job.buffer == "hugepage"
    # Whole huge pages from an aligned start: a huge page must lie entirely within the mapping.
    length = (-(-size // HUGE_PAGE) + 1) * HUGE_PAGE if huge else max(size, mmap.PAGESIZE)
    buf = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    advice = "MADV_HUGEPAGE" if huge else "MADV_NOHUGEPAGE"
    if hasattr(mmap, advice):  # a hint: 4 KiB pages where the kernel has no huge page to give (THP off)
        buf.madvise(getattr(mmap, advice))
    start = -buffer_address(buf) % HUGE_PAGE if huge else 0
    _fill(buf, start, start + reads * bs, random=False)
    _fill(buf, start + reads * bs, start + size, random=job.data == "random" and signature is None)
    if signature is not None:
        depth, every = job.iodepth, min(STAMP_BYTES, bs)
        data = bytearray(verify.pool(signature, writes // depth * bs))
        for t in range(writes // depth):
            verify.stamp_pool(memoryview(data)[t * bs : (t + 1) * bs], every, job.mark, signature)
            for lane in range(depth):
                at = start + (reads + lane + depth * t) * bs
                buf[at : at + bs] = data[t * bs : (t + 1) * bs]
    base = buffer_address(buf) + start
    return buf, base, base + reads * bs


def _fill(buf: mmap.mmap, first: int, end: int, random: bool) -> None:
    """Write buf[first:end] (random bytes, or zeros), a MiB at a time: its pages are faulted in now."""
    for off in range(first, end, 2**20):
        n = min(2**20, end - off)
        buf[off : off + n] = os.urandom(n) if random else bytes(n)


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


def _stopped(ops: int, planned: int) -> dict:
    """What ended a run that the time or its size ends (TIME_OR_SIZE): the time, or io.size reached first."""
    return {"stopped_by": "runtime" if ops < planned else "size"}


def stream(job: Job, index: int, op: str, start_line: threading.Barrier, done, reads: bytes | None = None) -> dict:
    """_stream on a CPU of its own where there are as many as streams, as mpirun binds IOR's ranks: unbound, a
    stream's thread woke on either of two cores after each call and ran 64 KiB calls at 0.85 of fio's rate in a
    fresh process (bound: 1.05-1.12; docs/bench-engines.md)."""
    with on_cpu(index, len(job.streams)) as cpu:
        results = _stream(job, index, op, start_line, done, reads)
    return {name: result | {"cpu": cpu} for name, result in results.items()}


def _stream(job: Job, index: int, op: str, start_line: threading.Barrier, done, reads: bytes | None = None) -> dict:
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
    # Verified, a reader has the write pool too: what it checks each block against.
    signature = job.verify[index] if job.verify else None
    turns = -(-POOL_BYTES // bs) if writing or signature is not None else 0
    buf, read_at, write_at = _buffers(job, depth if reading else 0, depth * turns, signature)
    order = array("q", where)
    hist = [Histogram(), Histogram()]  # writes, reads
    bins = loops.Series()
    io = IO(
        offsets=order.buffer_info()[0] if where else None,
        read_buffers=read_at,
        write_buffers=write_at,
        done=ctypes.addressof(done) + 8 * index,
        count=len(where),
        block_size=bs,
        write_turns=max(turns, 1),
        stamp_every=min(STAMP_BYTES, bs) if (job.data == "random" and bs >= 8) or job.verify else 0,
        fd=_open(s, job, op),
        depth=depth,
        read_all=op == "read",
        strict=op == "mixed",
        repeat=job.ends(op) == TIME,
        verify=signature is not None and reading,
    )
    io.counts[0], io.counts[1] = (h.counts.buffer_info()[0] for h in hist)
    loops.load()  # built and loaded now: a process's first run() must not do it inside the measured time
    bins.attach(io)
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
            io.deadline_ns = job.deadline(op, step or time.perf_counter_ns())
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
            stopped = _stopped(h.count, len(where)) if job.ends(op) == TIME_OR_SIZE else {}
            durable = end_durable if name == "write" else end
            step, nbytes, ops = bins.of(out, k)
            series = timeseries.raw(start, step, nbytes, ops, "python loop")
            checked = _checked(out, job, signature) if name == "read" and io.verify else {}
            # At depth 1 the device waits while a block is checked: the figure is the reads' time without the checks.
            # Deeper, the checks overlap what is in flight: they stay in the figure (docs/bench-engines.md).
            ended = end - checked["verify"]["seconds"] if checked and depth == 1 and op == "read" else end
            results[name] = _stream_result(
                s, out.moved[k], start, ended, durable if name == "write" else ended, h, series=series, **more,
                **stopped, **checked,
            )  # fmt: skip
    return results


def _checked(out, job: Job, signature: int) -> dict:
    """A verified read's check (loops.c's): bad blocks, the lowest one's first bad byte and what it held."""
    bad = out.bad_blocks
    return {
        "verify": {
            "bad_blocks": bad,
            "first_bad_offset": out.first_bad if bad else None,
            "first_bad_found": verify.found(out, job.verify, job.mark, signature) if bad else "",
            "seconds": out.check_ns / 1e9,
        }
    }


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


def run_streams(job: Job, op: str, one_stream, every: float) -> list[dict]:
    """Run `one_stream(index, start_line, done)` for every stream at once, in threads (the syscalls release
    the GIL), while a reporter logs the progress the streams count in `done`."""
    start_line = threading.Barrier(len(job.streams))
    done = (ctypes.c_int64 * len(job.streams))()  # each stream's bytes so far, counted by the C loop
    with progress(op, job.size * len(job.streams), done, every):
        if len(job.streams) == 1:
            return [one_stream(0, start_line, done)]
        with ThreadPoolExecutor(len(job.streams)) as pool:
            futures = [pool.submit(one_stream, i, start_line, done) for i in range(len(job.streams))]
            try:  # not the first stream's result first: it waits at the line for a later one that may have failed
                wait(futures, return_when=FIRST_EXCEPTION)
            finally:
                if not all(f.done() and f.exception() is None for f in futures):
                    start_line.abort()  # a stream that failed to set up must not leave the others at the line
            errors = [e for f in futures if (e := f.exception())]
            if errors:  # the failed stream's own error, not the broken line it left the others
                raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
            return [f.result() for f in futures]


def _describe(job: Job, op: str) -> str:
    call = "pwrite(2)" if op == "write" else "pread(2)"
    if job.iodepth > 1:
        call = f"io_uring IORING_OP_{op.upper()}, {job.iodepth} in flight,"
    pages = "2 MiB huge pages" if job.buffer == "hugepage" else "4 KiB pages"
    how = f"{job.pattern}, {'O_DIRECT' if job.direct else 'buffered'}, buffers in {pages}"
    how += ", then os.fsync()" if op == "write" else ""
    where = ", ".join(dict.fromkeys(s.path + (f"@{s.offset}" if s.offset else "") for s in job.streams))
    if job.slots > 1:
        where += f" (shared: stream s moves blocks s, s+{job.slots}, s+{2 * job.slots}, ... of it)"
    data = f" of {job.data} data" if op == "write" else ""
    streams = f"{len(job.streams)} stream(s)"
    count = f"{job.count} x" if not job.counts else f"{'/'.join(map(str, job.counts))} (what the write moved) x"
    if job.ends(op) == TIME_OR_SIZE:
        count = f"for {job.runtime:g} s, at most {job.count} x"
    checked = ", each block checked after its call (io.verify)" if job.verify and op == "read" else ""
    return f"python: {call} {count} {job.block_size} B{data} per stream ({how}{checked}), {streams}: {where}"


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write every stream (timing the flush too: the durable figure); one figure over all streams."""
    streams = run_streams(job, "write", lambda i, line, done: stream(job, i, "write", line, done)["write"], every)
    return aggregate(streams, _describe(job, "write"))


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read every stream into one reused buffer each (one per I/O in flight); one figure over all streams."""
    streams = run_streams(job, "read", lambda i, line, done: stream(job, i, "read", line, done)["read"], every)
    return aggregate(streams, _describe(job, "read")) | verify.columns(streams)
