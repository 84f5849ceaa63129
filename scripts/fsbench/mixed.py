"""Mixed reads and writes (patterns randrw and rw) with the python engine: one figure for the reads, one for the
writes of the same run.

Each stream visits each of its blocks once (randrw: in a seeded random order; rw: in order; with io.runtime, again
and again until the time is up) and reads or writes it; which, comes from a seeded shuffle holding exactly
round(blocks × rwmix_read / 100) reads, so the read share is what was asked, not what a coin gave (time-based:
exactly over whole passes). One call at a time (pread/pwrite). The writes are flushed at the end (fsync, inside the
writes' durable time, as fio's end_fsync=1); both figures take the mix's wall time.
"""

import mmap
import os
import random
import threading
import time

from .engine import PROGRESS_SECONDS, Job, _clock, _run, _stream_result, aggregate, offsets
from .latency import Histogram


def kinds(blocks: int, rwmix_read: int, seed: int) -> list[bool]:
    """Which of a stream's `blocks` operations read (True) and which write: exactly round(blocks × share) reads,
    in an order fixed by `seed`."""
    reads = round(blocks * rwmix_read / 100)
    order = [True] * reads + [False] * (blocks - reads)
    random.Random(seed).shuffle(order)
    return order


def _open(path: str, direct: bool) -> int:
    return os.open(path, os.O_RDWR | (os.O_DIRECT if direct else 0))


def _mixed_stream(job: Job, rwmix_read: int, index: int, start_line: threading.Barrier, done: list) -> dict:
    stream, bs = job.streams[index], job.block_size
    where = offsets(job, index)
    which = kinds(len(where), rwmix_read, job.seed * 7919 + index)
    into = mmap.mmap(-1, bs)  # page-aligned, as O_DIRECT needs
    data = mmap.mmap(-1, bs)
    if job.data == "random":
        data[:] = os.urandom(bs)
    stamp = job.data == "random" and bs >= 8
    fd = _open(stream.path, job.direct)
    hist = {True: Histogram(), False: Histogram()}
    moved = {True: 0, False: 0}
    ns, preadv, pwrite, bufs = time.perf_counter_ns, os.preadv, os.pwrite, [into]
    try:
        start_line.wait()
        start = _clock()
        deadline = job.deadline(ns())
        running = True
        while running:  # one pass over the blocks; time-based: passes until the time is up (as fio's time_based)
            for off, reading in zip(where, which, strict=True):
                if stamp and not reading:
                    data[:8] = off.to_bytes(8, "little")  # no two written blocks alike (as fio's scramble_buffers)
                t0 = ns()
                n = preadv(fd, bufs, off) if reading else pwrite(fd, data, off)
                t1 = ns()
                hist[reading].record(t1 - t0)
                if n != bs:
                    raise OSError(f"short {'read' if reading else 'write'} of {n} bytes at {off} of {stream.path}")
                moved[reading] += n
                done[index] += n
                if t1 >= deadline:
                    break
            running = job.runtime and t1 < deadline
        end = _clock()
        os.fsync(fd)
        end_durable = _clock()
    finally:
        os.close(fd)
        into.close()
        data.close()
    return {
        "read": _stream_result(stream, moved[True], start, end, end, hist[True]),
        "write": _stream_result(stream, moved[False], start, end, end_durable, hist[False]),
    }


def describe(job: Job, rwmix_read: int) -> str:
    order = "in a seeded random order" if job.pattern == "rand" else "in order"
    io = "O_DIRECT" if job.direct else "buffered"
    where = ", ".join(dict.fromkeys(s.path for s in job.streams))
    count = f"for {job.runtime:g} s, passes of {job.count}" if job.runtime else str(job.count)
    return (
        f"python mixed: {count} x {job.block_size} B per stream {order}, {rwmix_read}% os.preadv() and the "
        f"rest os.pwrite() (a seeded shuffle), {io}, then os.fsync(); {len(job.streams)} stream(s): {where}"
    )


def run(job: Job, rwmix_read: int, every: float = PROGRESS_SECONDS) -> dict:
    """The mix on every stream at once: {"read": figure, "write": figure} (engine.aggregate's shape each)."""
    if job.iodepth != 1:
        raise ValueError("python engine: mixed patterns run one call at a time (iodepth 1); use fio for more")
    streams = _run(job, "mixed", lambda i, line, done: _mixed_stream(job, rwmix_read, i, line, done), every)
    command = describe(job, rwmix_read)
    return {op: aggregate([s[op] for s in streams], command) for op in ("read", "write")}
