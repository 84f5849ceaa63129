"""Mixed reads and writes (patterns randrw and rw) with the python engine: one figure for the reads, one for the
writes of the same run.

Each stream visits each of its blocks once (randrw: in a seeded random order; rw: in order; with io.runtime, again
and again until the time is up) and reads or writes it; which, comes from a seeded shuffle holding exactly
round(blocks × rwmix_read / 100) reads, so the read share is what was asked, not what a coin gave (time-based:
exactly over whole passes). engine.stream moves them: at depth 1 one call at a time (pread/pwrite); deeper,
that many in flight through io_uring, the next operation of the sequence queued as each completes. The writes are
flushed at the end (fsync, inside the writes' durable time, as fio's end_fsync=1); both figures take the mix's
wall time.
"""

import random

from fsbench.engines import verify
from fsbench.engines.job import PROGRESS_SECONDS, TIME, Job, aggregate
from fsbench.engines.python import run_streams, stream


def kinds(blocks: int, rwmix_read: int, seed: int) -> list[bool]:
    """Which of a stream's `blocks` operations read (True) and which write: exactly round(blocks × share) reads,
    in an order fixed by `seed`."""
    reads = round(blocks * rwmix_read / 100)
    order = [True] * reads + [False] * (blocks - reads)
    random.Random(seed).shuffle(order)
    return order


def describe(job: Job, rwmix_read: int) -> str:
    order = "in a seeded random order" if job.pattern == "rand" else "in order"
    io = "O_DIRECT" if job.direct else "buffered"
    where = ", ".join(dict.fromkeys(s.path for s in job.streams))
    count = f"for {job.runtime:g} s, passes of {job.count}" if job.ends("mixed") == TIME else str(job.count)
    calls = ("pread(2)", "pwrite(2)")
    if job.iodepth > 1:
        calls = (f"io_uring IORING_OP_READ ({job.iodepth} in flight)", "IORING_OP_WRITE")
    return (
        f"python mixed: {count} x {job.block_size} B per stream {order}, {rwmix_read}% {calls[0]} and the "
        f"rest {calls[1]} (a seeded shuffle), {io}, then os.fsync(); {len(job.streams)} stream(s): {where}"
    )


def run(job: Job, rwmix_read: int, every: float = PROGRESS_SECONDS) -> dict:
    """The mix on every stream at once: {"read": figure, "write": figure} (job.aggregate's shape each)."""

    def one_stream(i, line, done):
        reads = kinds(job.blocks(i), rwmix_read, job.seed * 7919 + i)
        return stream(job, i, "mixed", line, done, bytes(reads))

    streams = run_streams(job, "mixed", one_stream, every)
    command = describe(job, rwmix_read)
    figures = {op: aggregate([s[op] for s in streams], command) for op in ("read", "write")}
    figures["read"] |= verify.columns(figures["read"]["streams"])
    return figures
