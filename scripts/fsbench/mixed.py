"""Mixed reads and writes (patterns randrw and rw) with the python engine: one figure for the reads, one for the
writes of the same run.

Each stream visits each of its blocks once (randrw: in a seeded random order; rw: in order; with io.runtime, again
and again until the time is up) and reads or writes it; which, comes from a seeded shuffle holding exactly
round(blocks × rwmix_read / 100) reads, so the read share is what was asked, not what a coin gave (time-based:
exactly over whole passes). At depth 1 one call at a time (pread/pwrite); deeper, that many in flight through
io_uring, the next operation of the sequence queued as each completes. The writes are flushed at the end (fsync,
inside the writes' durable time, as fio's end_fsync=1); both figures take the mix's wall time.
"""

import mmap
import os
import random
import threading
import time

from .engine import PROGRESS_SECONDS, DataPool, Job, _clock, _run, _stream_result, aggregate, offsets
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
    return _both(stream, moved, hist, start, end, end_durable)


def _both(stream, moved: dict, hist: dict, start: float, end: float, end_durable: float, **more) -> dict:
    """A stream's reads and writes (keyed True and False in `moved` and `hist`) as two results of one run."""
    return {
        "read": _stream_result(stream, moved[True], start, end, end, hist[True], **more),
        "write": _stream_result(stream, moved[False], start, end, end_durable, hist[False], **more),
    }


def _mixed_uring_stream(job: Job, rwmix_read: int, index: int, start_line: threading.Barrier, done: list) -> dict:
    """The mix with job.iodepth operations always in flight: lane l (one in flight at a time) sends a read through
    SQE l or a write through SQE depth + l, each with a buffer of its own; as operations complete, the lanes take
    the next ones of the sequence. A latency runs from the clock read of the batch that queued the operation to
    the one after the wait that reaped it (as engine._uring_stream)."""
    from .uring import buffer_address, check, fast_ring

    stream, bs, depth = job.streams[index], job.block_size, job.iodepth
    where = offsets(job, index)
    which = kinds(len(where), rwmix_read, job.seed * 7919 + index)
    n = len(where)
    pool = DataPool(bs, job.data, 2 * depth)  # buffers 0..depth-1 read into, depth..2depth-1 written from
    address = [buffer_address(b) for b in pool.blocks]
    stamps = pool.stamps
    fd = _open(stream.path, job.direct)
    hist = {True: Histogram(), False: Histogram()}
    moved = {True: 0, False: 0}
    ns, queued_at = time.perf_counter_ns, [0] * (2 * depth)
    try:
        with fast_ring(2 * depth) as ring:
            ring.fix_slots("read", fd, bs, address[:depth])
            ring.fix_slots("write", fd, bs, address[depth:], depth)
            k = 0  # operations queued so far; the sequence is passed over again while time-based

            def queue(lanes: list[int], now: int) -> None:
                nonlocal k
                slots, offs = [], []
                for lane in lanes:
                    off, reading = where[k % n], which[k % n]
                    slot = lane if reading else depth + lane
                    if stamps and not reading:
                        stamps[slot](off)  # no two written blocks alike (as fio's scramble_buffers)
                    slots.append(slot)
                    offs.append(off)
                    queued_at[slot] = now
                    k += 1
                ring.queue_many(slots, offs)

            start_line.wait()
            start = _clock()
            now = ns()
            deadline = job.deadline(now)
            queue(list(range(min(depth, n))), now)
            in_flight = k
            while in_flight:
                ring.submit_and_wait(1)
                now = ns()
                slots, results = ring.reap()
                for slot, res in zip(slots, results, strict=True):
                    reading = slot < depth
                    if res != bs:
                        check(res, f"{'read' if reading else 'write'} of {stream.path}")
                        raise OSError(f"short {'read' if reading else 'write'} of {res} bytes of {stream.path}")
                    hist[reading].record(now - queued_at[slot])
                    moved[reading] += bs
                    done[index] += bs
                if now >= deadline:  # time-based: queue no more, let what is in flight complete
                    more = 0
                else:  # time-based: pass after pass; else each block once
                    more = len(slots) if job.runtime else min(len(slots), n - k)
                if more:
                    queue([slot % depth for slot in slots[:more]], now)
                in_flight += more - len(slots)
            end = _clock()
            os.fsync(fd)
            end_durable = _clock()
    finally:
        os.close(fd)
        pool.close()
    return _both(stream, moved, hist, start, end, end_durable, iodepth=depth)


def describe(job: Job, rwmix_read: int) -> str:
    order = "in a seeded random order" if job.pattern == "rand" else "in order"
    io = "O_DIRECT" if job.direct else "buffered"
    where = ", ".join(dict.fromkeys(s.path for s in job.streams))
    count = f"for {job.runtime:g} s, passes of {job.count}" if job.runtime else str(job.count)
    calls = ("os.preadv()", "os.pwrite()")
    if job.iodepth > 1:
        calls = (f"io_uring IORING_OP_READ ({job.iodepth} in flight)", "IORING_OP_WRITE")
    return (
        f"python mixed: {count} x {job.block_size} B per stream {order}, {rwmix_read}% {calls[0]} and the "
        f"rest {calls[1]} (a seeded shuffle), {io}, then os.fsync(); {len(job.streams)} stream(s): {where}"
    )


def run(job: Job, rwmix_read: int, every: float = PROGRESS_SECONDS) -> dict:
    """The mix on every stream at once: {"read": figure, "write": figure} (engine.aggregate's shape each)."""
    one_stream = _mixed_uring_stream if job.iodepth > 1 else _mixed_stream
    streams = _run(job, "mixed", lambda i, line, done: one_stream(job, rwmix_read, i, line, done), every)
    command = describe(job, rwmix_read)
    return {op: aggregate([s[op] for s in streams], command) for op in ("read", "write")}
