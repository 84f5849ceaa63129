"""What every engine runs and gives back: a Job of Streams, the order of its blocks, progress while it runs,
and one figure over its streams."""

import logging
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass

from fsbench.toolkit import timeseries
from fsbench.toolkit.latency import Histogram
from fsbench.toolkit.records import iso_utc

PROGRESS_SECONDS = 10.0
NEVER = 2**63 - 1  # a deadline that never comes (the largest perf_counter_ns a C int64 holds)
# What ends a run (Job.ends): every block moved once; the time, or every block written once, whichever comes first
# (a time-based write); the time alone, the blocks gone over again and again until it is up (a time-based mix).
SIZE, TIME_OR_SIZE, TIME = "size", "time or size", "time"
log = logging.getLogger("fsbench")


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
    _: KW_ONLY  # the rest by name: a job has too many settings to pass by position
    pattern: str = "seq"  # seq | rand: rand touches every block once, in an order drawn from `seed`
    direct: bool = False  # O_DIRECT
    data: str = "random"  # random (incompressible) | zero
    buffer: str = "page"  # the python engine's buffers: page (4 KiB pages, as fio's and IOR's) | hugepage
    seed: int = 0
    iodepth: int = 1  # I/Os in flight per stream: 1 is one call at a time, more go through io_uring
    # Streams sharing one file (shared_file, IOR's N-1): stream slot s moves blocks s, s + slots, s + 2 slots, ...
    # of it, disjoint and interleaved; 1: each stream has its own file (or region).
    slots: int = 1
    # Time-based (io.runtime, seconds; 0: not): what the time ends, Job.ends. fsbench.measurement.cell_job gives it
    # to the runs a campaign's time bounds (a cell's write, or its mix), never to a mix's layout nor to a read.
    runtime: float = 0.0
    # Blocks each stream moves, where not all `size` of them: a read after a time-based write covers what it wrote,
    # the first counts[i] blocks of stream i's order.
    counts: tuple[int, ...] = ()
    # io.verify (fsbench.engines.verify): each stream's signature, and the cell's mark, that its blocks carry and
    # its reads check; () : not verified.
    verify: tuple[int, ...] = ()
    mark: int = 0

    def check(self, engine: str) -> None:
        """What every engine asks of a job: data it knows, and a whole number of blocks per stream."""
        if self.data not in ("zero", "random"):
            raise ValueError(f"{engine} engine: unknown data {self.data!r}; allowed: zero, random")
        if self.block_size <= 0 or self.size < self.block_size or self.size % self.block_size:
            raise ValueError(
                f"{engine} engine: size {self.size} is not a whole number of {self.block_size}-byte blocks"
            )

    @property
    def count(self) -> int:
        return self.size // self.block_size

    def blocks(self, index: int) -> int:
        """How many blocks stream `index` moves."""
        return self.counts[index] if self.counts else self.count

    def ends(self, op: str) -> str:
        """What ends `op` (write, read or mixed) of this job: SIZE, TIME_OR_SIZE or TIME. The one answer to "is
        this run time-based?", which the engines and the measurement read instead of asking the op. A read is
        never time-based: after a time-based write it moves what the write moved (`counts`)."""
        if not self.runtime:
            return SIZE
        if op == "read":
            raise ValueError("a read is never time-based: after a time-based write it reads what it wrote (counts)")
        return TIME if op == "mixed" else TIME_OR_SIZE

    def deadline(self, op: str, now_ns: int) -> int:
        """When `op` of this job, started at perf_counter_ns() `now_ns`, must stop (never, if the time ends it not)."""
        return NEVER if self.ends(op) == SIZE else now_ns + round(self.runtime * 1e9)

    def expected_bytes(self, op: str) -> int | None:
        """What `op` must move: every block of every stream, or (None) as much as the time allows."""
        return sum(map(self.blocks, range(len(self.streams)))) * self.block_size if self.ends(op) == SIZE else None


def aggregate(streams: list[dict], command: str) -> dict:
    """Many streams as one figure: total bytes over the time from the first start to the last end.

    Each stream dict has bytes and the wall-clock (epoch seconds) start, end and end_durable; `ops` (the
    I/O calls it made) where the engine counts them, and `latency` (a latency.Histogram record) where it
    times each one: merged over the streams into the latency columns. Each stream's `series` (what completed
    when, timeseries.raw), where the engine records one, is taken out of it and summed over the streams into
    `recorded_series`.
    """
    start = min(s["start"] for s in streams)
    recorded = timeseries.combine([s.pop("series", None) for s in streams])
    merged = Histogram()
    for s in streams:
        if "latency" in s:
            merged.merge(Histogram.from_record(s["latency"]))
    return {
        "bytes": sum(s["bytes"] for s in streams),
        "seconds": max(s["end"] for s in streams) - start,
        "seconds_durable": max(s["end_durable"] for s in streams) - start,
        "started_at": iso_utc(start),
        "ops": sum(s["ops"] for s in streams) if all("ops" in s for s in streams) else float("nan"),
        **merged.summary(),
        "command": command,
        "streams": streams,
        "recorded_series": recorded,
    }


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
