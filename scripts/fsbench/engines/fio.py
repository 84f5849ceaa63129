"""The fio engine: one fio run, one job section per stream, all running at once.

Figures per stream, from fio's JSON: the dd-style `seconds` is the time spent inside the write (read)
calls, write.lat_ns.mean x write.total_ios (with the synchronous psync engine one call is one I/O, and
lat_ns has ns resolution where runtime has whole ms); the durable `seconds_durable` of a write is
write.runtime, which with end_fsync=1 includes the flush at the end. Reads use the lat_ns sum for both.
The time series comes from fio's own logs: for a size-based job of at most PER_IO_LOG operations per stream its
IOPS log of every I/O (time in ms and size: exact); else its bandwidth and IOPS logs averaged over LOG_MSEC
windows (each window's KiB/s and IOPS times its length).
The caller drops caches and measures what stayed cached; invalidate=0 keeps fio from changing that.
"""

import json
import math
import os
import shlex
import subprocess
import tempfile
import time
from pathlib import Path

from fsbench.engines.job import PROGRESS_SECONDS, SIZE, TIME, TIME_OR_SIZE, ChildBytes, Job, aggregate, extent, progress
from fsbench.toolkit import timeseries
from fsbench.toolkit.latency import Histogram
from fsbench.toolkit.system import ToolError


def _escape(path: str) -> str:
    if "\n" in path:
        raise ValueError(f"fio engine: a file name with a newline cannot go into a job file: {path!r}")
    return path.replace(":", "\\:")  # fio splits filename= on ':' (several files per job) unless escaped


# fio's bandwidth and IOPS logs average over windows of this many ms (whole KiB/s and IOPS, timed in whole ms:
# over a run they sum to within a few % of io_bytes and total_ios, to which they are then scaled).
LOG_MSEC = 10
# Up to this many operations per stream (size-based), fio logs every I/O instead: a run of a few ms then still has
# a series (fio writes no windowed entry for a run shorter than its window), for ~20 bytes of log per I/O.
PER_IO_LOG = 200_000


def per_io(job: Job, op: str) -> bool:
    """Whether fio logs every I/O of this job (else LOG_MSEC windows)."""
    return job.ends(op) == SIZE and max(map(job.blocks, range(len(job.streams)))) <= PER_IO_LOG


def job_file(job: Job, op: str, rwmix_read: int | None = None, logs: str | None = None) -> str:
    """The fio job file (ini text) that moves job.size bytes per stream, all streams at once; op `mixed`: reads
    and writes (rw / randrw) with rwmix_read percent of the operations reads. `logs`: a folder where each stream
    keeps its IOPS log of every I/O (per_io), or its windowed bandwidth and IOPS logs (stream<i>_bw.*.log,
    stream<i>_iops.*.log)."""
    if op not in ("write", "read", "mixed"):
        raise ValueError(f"fio engine: op must be write, read or mixed, not {op!r}")
    if (op == "mixed") != (rwmix_read is not None):
        raise ValueError("fio engine: rwmix_read goes with op mixed, and only with it")
    if job.pattern not in ("seq", "rand"):
        raise ValueError(f"fio engine: unknown pattern {job.pattern!r}; allowed: seq, rand")
    job.check("fio")
    # Shared file: after each block, skip the other streams' (fio's offset modifier for sequential I/O).
    skip = f":{(job.slots - 1) * job.block_size}" if job.slots > 1 else ""
    lines = [
        "[global]",
        # One call at a time (psync), or job.iodepth in flight through io_uring (libaio where it is missing).
        *(["ioengine=psync"] if job.iodepth == 1 else [f"ioengine={_async_engine()}", f"iodepth={job.iodepth}"]),
        f"bs={job.block_size}",
        f"size={job.size}",
        f"direct={int(job.direct)}",
        f"rw={'rand' if job.pattern == 'rand' else ''}{'rw' if op == 'mixed' else op}{skip}",
        *([f"rwmixread={rwmix_read}"] if op == "mixed" else []),
        # rand: every block exactly once (the random map), in an order fixed by the job's seed.
        "norandommap=0",
        "randrepeat=0",
        "random_generator=tausworthe64",
        f"randseed={job.seed}",
        "invalidate=0",  # the caller made and measured the cache state; fio must not drop it again
        "fallocate=none",  # blocks are allocated by the writes themselves, as with dd and the python engine
        *(["end_fsync=1"] if op in ("write", "mixed") else []),
        # Time-based: a write stops at the time or at size, whichever is first; a mix runs over its files until
        # the time is up. Whole ms (fio's unit).
        *([f"runtime={round(job.runtime * 1000)}ms"] if job.ends(op) != SIZE else []),
        *(["time_based=1"] if job.ends(op) == TIME else []),
        # random: fresh random bytes in every buffer (incompressible, no dedupe); zero: like /dev/zero.
        "refill_buffers=1" if job.data == "random" else "zero_buffers=1",
        "thread",
        "group_reporting=0",  # one result per stream
        *([f"log_avg_msec={0 if per_io(job, op) else LOG_MSEC}", "log_unix_epoch=1"] if logs else []),
    ]
    for i, stream in enumerate(job.streams):
        lines += ["", f"[stream{i}]", f"filename={_escape(stream.path)}"]
        if logs:
            prefix = _escape(str(Path(logs) / f"stream{i}"))
            lines += [f"write_iops_log={prefix}"] + ([] if per_io(job, op) else [f"write_bw_log={prefix}"])
        if job.slots > 1:
            # From the stream's first block to the end of the shared file, of which it moves job.size bytes.
            start = stream.offset + stream.slot * job.block_size
            lines += [f"offset={start}", f"size={stream.offset + job.size * job.slots - start}"]
        elif stream.device or stream.offset:
            lines.append(f"offset={stream.offset}")
        if job.slots > 1 or job.counts:  # a read after a time-based write: what this stream wrote
            lines.append(f"io_size={job.blocks(i) * job.block_size}")
    return "\n".join(lines) + "\n"


def _run(job: Job, op: str, every: float, rwmix_read: int | None = None) -> dict:
    """Run fio on the job; its figure for `op`, or for a mix {"read": figure, "write": figure}."""
    total = sum(job.blocks(i) for i in range(len(job.streams))) * job.block_size
    logs = tempfile.mkdtemp(prefix="fsbench-fio-logs-")
    text = job_file(job, op, rwmix_read, logs)
    fd, path = tempfile.mkstemp(prefix="fsbench-", suffix=".fio")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        argv = ["fio", "--output-format=json+", path]  # json+: the latency bins of every job
        # Progress from fio's /proc/<pid>/io (job.ChildBytes): no --status-interval, whose reports would
        # go to stdout ahead of the JSON read below. One process holds every stream, as the job runs `thread`.
        with ChildBytes(op) as moved, progress(op, total, moved, every):
            launched, t0 = time.time(), time.perf_counter()
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            except FileNotFoundError:
                raise ToolError("fio is not installed; run `make setup`") from None
            moved.watch(proc, total)
            try:
                stdout, stderr = proc.communicate()  # a large campaign can run for hours; no timeout
            except BaseException:  # interrupted: leave no fio behind (as subprocess.run would)
                proc.kill()
                proc.wait()
                raise
            wall = time.perf_counter() - t0
        every = per_io(job, op)
        series = {i: _every_io(logs, i) if every else _series(logs, i) for i in range(len(job.streams))}
    finally:
        os.unlink(path)
        for f in Path(logs).iterdir():
            f.unlink()
        os.rmdir(logs)
    command = f"{shlex.join(argv)}\n{text}"
    said = " | ".join((stderr.strip() or "no message").splitlines()[-5:])
    try:
        report = json.loads(stdout[stdout.index("{") :])  # fio may print notes before the JSON
    except ValueError:
        raise ToolError(f"{shlex.join(argv)} failed (exit {proc.returncode}), no JSON report: {said}") from None
    jobs = {j["jobname"]: j for j in report.get("jobs", [])}
    sections = ["read", "write"] if op == "mixed" else [op]
    ends = job.ends(op)
    streams = {section: [] for section in sections}
    for i, stream in enumerate(job.streams):
        j = jobs.get(f"stream{i}")
        if j is None:
            raise ToolError(f"{shlex.join(argv)}: no result for [stream{i}] ({stream.path}) in fio's report: {said}")
        if j["error"] or proc.returncode:
            err = f"error {j['error']} ({os.strerror(j['error'])})" if j["error"] else f"exit {proc.returncode}"
            raise ToolError(f"fio {op} of {stream.path} failed, {err}: {said}")
        moved = sum(j[section]["io_bytes"] for section in sections)
        expected = job.blocks(i) * job.block_size
        if ends == SIZE:
            whole = moved == expected
        else:  # time-based, in whole blocks: a write up to its size, a mix as much as the time allowed
            whole = 0 < moved <= (expected if ends == TIME_OR_SIZE else float("inf")) and moved % job.block_size == 0
        if not whole:
            raise ToolError(f"fio {op} of {stream.path} moved {moved} bytes, expected {expected}: {said}")
        stopped = {"stopped_by": "size" if moved == expected else "runtime"} if ends == TIME_OR_SIZE else {}
        # A mix's reads and writes share its wall time (runtime: whole ms, the final fsync included).
        mix = max(j[section]["runtime"] for section in sections) / 1000
        for section in sections:
            io = j[section]
            # psync: the calls' time; at a depth above 1 calls overlap, and runtime (whole ms) is all there is.
            seconds = io["lat_ns"]["mean"] * io["total_ios"] / 1e9 if job.iodepth == 1 else io["runtime"] / 1000
            seconds = mix if op == "mixed" else seconds
            # runtime is in whole ms and includes the writes: never report durable below what it contains.
            durable = max(io["runtime"] / 1000, seconds) if section == "write" else seconds
            # fio starts its jobs together and does not report when each started; each stream is timed from
            # the common launch, so fio's own start-up before the first I/O is excluded from every figure.
            streams[section].append(
                {
                    "path": stream.path,
                    "offset": stream.offset,
                    "bytes": io["io_bytes"],
                    "start": launched,
                    "end": launched + seconds,
                    "end_durable": launched + durable,
                    "seconds": seconds,
                    "seconds_durable": durable,
                    "fio_runtime_ms": io["runtime"],
                    "fio_lat_ns_mean": io["lat_ns"]["mean"],
                    "fio_total_ios": io["total_ios"],
                    "fio_wall_seconds": wall,
                    "ops": io["total_ios"],
                    "latency": _latency(io["clat_ns"]).as_record(),
                    "series": _scaled(series[i].get(section), io["io_bytes"], io["total_ios"]),
                    **stopped,
                }
            )
    figures = {}
    for section, found in streams.items():
        result = aggregate(found, command)
        # All streams share one start, so aggregate's figures are the longest stream's; taken directly they
        # keep the ns resolution that epoch floats (~0.2 us steps) would round away.
        result["seconds"] = max(s["seconds"] for s in found)
        result["seconds_durable"] = max(s["seconds_durable"] for s in found)
        figures[section] = result
    return figures if op == "mixed" else figures[op]


def _log(path: Path, field: int = 1) -> dict[str, list[tuple[int, int]]]:
    """A fio log: per direction (read, write), its (time ms, value) entries; `field` 3: (time, I/O size)."""
    found = {"read": [], "write": []}
    for line in path.read_text().splitlines() if path.exists() else []:
        fields = line.split(",")
        if len(fields) >= 4 and fields[2].strip() in ("0", "1"):
            found[("read", "write")[int(fields[2])]].append((int(fields[0]), int(fields[field])))
    return found


def _every_io(logs: str, i: int) -> dict[str, dict]:
    """Stream i's time series per direction in 1 ms bins from its IOPS log of every I/O (epoch ms, size): exact."""
    found = {}
    entries = _log(next(Path(logs).glob(f"stream{i}_iops.*.log"), Path(logs) / "none"), field=3)
    for ddir, ios in entries.items():
        if not ios:
            continue
        origin = min(t for t, _ in ios) - 1  # the first I/O completed in the first ms
        size = max(t for t, _ in ios) - origin
        nbytes, ops = [0] * size, [0] * size
        for t, bs in ios:
            nbytes[t - origin - 1] += bs
            ops[t - origin - 1] += 1
        found[ddir] = timeseries.raw(origin / 1000, 0.001, nbytes, ops, "fio iops log (every I/O)")
    return found


def _series(logs: str, i: int) -> dict[str, dict]:
    """Stream i's time series per direction (timeseries.raw in LOG_MSEC bins) from its bandwidth and IOPS logs,
    timed in epoch ms (log_unix_epoch). An entry at t is the average over the window (t − LOG_MSEC, t], logged only
    where something completed in it (seen under a throttle: entries ~100 ms apart, each the burst of its 10 ms),
    so its bytes (KiB/s × window) and operations go to that window. The series starts with the first window: fio's
    own start-up before it is no part of the device's rate."""
    found = {}
    bw, iops = (_log(next(Path(logs).glob(f"stream{i}_{kind}.*.log"), Path(logs) / "none")) for kind in ("bw", "iops"))
    for ddir in ("read", "write"):
        if not bw[ddir]:
            continue
        origin = min(t for t, _ in bw[ddir] + iops[ddir]) - LOG_MSEC
        size = math.ceil((max(t for t, _ in bw[ddir] + iops[ddir]) - origin) / LOG_MSEC)
        nbytes, ops = [0.0] * size, [0.0] * size
        for entries, unit, into in ((bw[ddir], 1024, nbytes), (iops[ddir], 1, ops)):
            before = 0
            for t, value in entries:
                t -= origin
                begin = max(before, t - LOG_MSEC)
                for k in range(begin // LOG_MSEC, math.ceil(t / LOG_MSEC)):
                    overlap = min(t, (k + 1) * LOG_MSEC) - max(begin, k * LOG_MSEC)
                    if overlap > 0:
                        into[k] += value * unit * overlap / 1000
                before = t
        found[ddir] = timeseries.raw(origin / 1000, LOG_MSEC / 1000, nbytes, ops, "fio bw/iops logs")
    return found


def _scaled(series: dict | None, nbytes: int, ops: int) -> dict | None:
    """The logged series scaled to fio's own totals: its entries are whole KiB/s and IOPS over windows timed in
    whole ms, which sum to a few % off io_bytes and total_ios; the shape over time is what they tell."""
    if not series:
        return None
    out = dict(series)
    for key, total in (("bytes", nbytes), ("ops", ops)):
        have, running, whole = sum(series[key]), 0.0, []
        for v in series[key]:  # whole numbers that add up to the total: the running sum, rounded
            before = round(running)
            running += v * total / have if have else 0.0
            whole.append(round(running) - before)
        out[key] = whole
    return out


def _async_engine() -> str:
    from fsbench.engines.uring import why_unavailable

    return "libaio" if why_unavailable() else "io_uring"


def _latency(clat: dict) -> Histogram:
    """fio's completion latency from its json+ bins: with psync the whole call (submission latency is 0), with
    io_uring from submission to completion."""
    return Histogram.from_bins(clat.get("bins", {}), clat["mean"], clat["max"])


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write job.size bytes to every stream at once (time-based: until job.runtime, at most that), then fsync each
    (end_fsync=1); progress every `every` s."""
    return _run(job, "write", every)


def mixed(job: Job, rwmix_read: int, every: float = PROGRESS_SECONDS) -> dict:
    """Reads and writes of files that hold job.size bytes each (rw / randrw, rwmix_read % reads), flushed at the end
    (end_fsync=1): {"read": figure, "write": figure}, both over the mix's time."""
    _check_readable(job)
    return _run(job, "mixed", every, rwmix_read)


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read job.size bytes (or job.counts blocks) of every stream at once (progress every `every` s). Files must
    already hold them."""
    _check_readable(job)
    return _run(job, "read", every)


def _check_readable(job: Job) -> None:
    for i, stream in enumerate(job.streams):
        # fio would silently lay out (write) a missing or short file first, then "read" it from page cache.
        have = os.path.getsize(stream.path) if os.path.exists(stream.path) else None
        if not stream.device and (have is None or have < extent(job, i)):
            raise ToolError(
                f"fio engine: cannot read {job.blocks(i) * job.block_size} bytes of {stream.path}: it "
                + ("does not exist" if have is None else f"holds {have} bytes")
                + "; write it first"
            )
