"""The dd engine: GNU dd as the seed ran it, one process per stream, all started together.

`seconds` is what dd prints (time until its last write returned); the durable figure is the seed's
`time dd && sync`, done per file: right after dd exits the target is fsync'ed, and the time runs from
just before dd was started to the end of that fsync. No conv=fsync/fdatasync, so dd's own figure stays
the page-cache figure it always was. The caller drops caches; this module never does.
"""

import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time

from fsbench.engines.ddlog import parse_dd_log
from fsbench.engines.job import PROGRESS_SECONDS, ChildBytes, Job, Stream, aggregate, progress
from fsbench.toolkit.system import ToolError

POOL_DIR = "/dev/shm"
# dd's closing lines are translated in other locales ("Bytes kopiert", "68,9 s"); parse_dd_log reads C.
_ENV = {**os.environ, "LC_ALL": "C"}


def _check(job: Job) -> None:
    # What dd cannot do at all is refused before it is called (fsbench.engines.table.run).
    if job.pattern != "seq":
        raise ValueError(f"dd engine: unknown pattern {job.pattern!r}; allowed: seq")
    job.check("dd")
    for s in job.streams:
        if s.offset % job.block_size:
            raise ValueError(f"dd engine: offset {s.offset} of {s.path} is not a multiple of bs={job.block_size}")


def write_argv(job: Job, stream: Stream, source: str = "/dev/zero") -> list[str]:
    """dd writing job.count blocks from `source` to the stream (at its offset on a device)."""
    _check(job)
    argv = ["dd", f"if={source}", f"of={stream.path}", f"bs={job.block_size}", f"count={job.count}"]
    if stream.device or stream.offset:
        argv.append(f"seek={stream.offset // job.block_size}")
    if job.direct:
        argv.append("oflag=direct")
    if stream.device:
        argv.append("conv=notrunc")
    return argv


def read_argv(job: Job, stream: Stream) -> list[str]:
    """dd reading job.count blocks of the stream (from its offset on a device) into /dev/null."""
    _check(job)
    argv = ["dd", f"if={stream.path}", "of=/dev/null", f"bs={job.block_size}", f"count={job.count}"]
    if stream.device or stream.offset:
        argv.append(f"skip={stream.offset // job.block_size}")
    if job.direct:
        argv.append("iflag=direct")
    return argv


def parse(stderr: str, job: Job, argv: list[str]) -> dict:
    """dd's closing lines (any format parse_dd_log knows), checked: job.size bytes in full records only."""
    runs = parse_dd_log(stderr)
    if len(runs) != 1:
        raise ToolError(
            f"{shlex.join(argv)}: expected one closing 'copied' line from dd, found {len(runs)}: {stderr!r}"
        )
    run = runs[0]
    out = run["records_out"]
    if out is not None and out != (job.count, 0):
        raise ToolError(
            f"{shlex.join(argv)}: dd wrote {out[0]} full and {out[1]} partial records, expected {job.count} full"
            f" ({run['bytes']} of {job.size} bytes)"
        )
    if run["bytes"] != job.size:
        raise ToolError(f"{shlex.join(argv)}: dd moved {run['bytes']} bytes, expected {job.size}")
    return {"dd_seconds": run["seconds"], "dd_rate": run["rate"], "records_out": out, "ops": out[0] + out[1]}


def _mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def make_pool(size: int) -> str:
    """A file of `size` random bytes on /dev/shm, for dd to copy from: dd has no incompressible source
    that is fast enough (/dev/urandom costs CPU inside the timed run)."""
    hint = "use io.data: zero, or engine python or fio, which make random data without a pool"
    try:
        free = shutil.disk_usage(POOL_DIR).free
    except OSError as e:
        raise ToolError(f"dd engine: random data needs a pool file on {POOL_DIR} ({e.strerror}); {hint}") from None
    if size > free or size > _mem_available() // 2:
        raise ToolError(
            f"dd engine: random data needs a {size}-byte pool on {POOL_DIR}, which has {free} bytes free"
            f" and MemAvailable/2 is {_mem_available() // 2} bytes; {hint}"
        )
    fd, path = tempfile.mkstemp(prefix="fsbench-dd-pool-", dir=POOL_DIR)
    try:
        step = 2**20
        for off in range(0, size, step):
            os.write(fd, os.urandom(min(step, size - off)))
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return path


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _run(job: Job, op: str, argvs: list[list[str]], every: float) -> list[dict]:
    """Start one dd per stream back to back, then wait for each in its own thread so that each stream's
    exit (and, for writes, its fsync right after) is timed when it happens, not when its turn comes.
    Meanwhile progress is logged from each dd's /proc/<pid>/io (job.ChildBytes: nothing asked of dd)."""
    durable = op == "write"
    streams: list[dict] = [{} for _ in argvs]
    procs: list[subprocess.Popen] = []
    try:
        for s, argv in zip(streams, argvs, strict=True):
            s["start"], s["t0"] = time.time(), time.perf_counter()
            procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_ENV))
    except FileNotFoundError:
        for p in procs:
            p.kill()
            p.wait()
        raise ToolError("dd is not installed; run `make setup`") from None

    def wait(i: int) -> None:
        stream, proc = streams[i], procs[i]
        # Epoch times as start + a monotonic interval: a clock step during the run cannot bend a figure.
        stream["stderr"] = proc.communicate()[1]
        stream["end"] = stream["start"] + time.perf_counter() - stream["t0"]
        if proc.returncode == 0 and durable:
            try:
                _fsync(job.streams[i].path)
            except OSError as e:
                stream["fsync_error"] = f"fsync({job.streams[i].path}): {e.strerror}"
        stream["end_durable"] = stream["start"] + time.perf_counter() - stream["t0"] if durable else stream["end"]

    with ChildBytes(op) as moved, progress(op, job.size * len(procs), moved, every):
        for proc in procs:
            moved.watch(proc, job.size)
        threads = [threading.Thread(target=wait, args=(i,)) for i in range(len(procs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    results = []
    for st, argv, proc, s in zip(job.streams, argvs, procs, streams, strict=True):
        if proc.returncode != 0:
            said = " | ".join(s["stderr"].strip().splitlines()[-5:]) or "no output"
            raise ToolError(f"{shlex.join(argv)} failed (exit {proc.returncode}): {said}")
        if "fsync_error" in s:
            raise ToolError(s["fsync_error"])
        results.append(
            {
                "path": st.path,
                "offset": st.offset,
                "bytes": job.size,
                "start": s["start"],
                "end": s["end"],
                "end_durable": s["end_durable"],
                **parse(s["stderr"], job, argv),
                "command": shlex.join(argv),
            }
        )
    return results


def _result(streams: list[dict], command: str, durable: bool) -> dict:
    result = aggregate(streams, command)
    # Parallel streams: total bytes over wall time from the first Popen to the last exit, since each dd
    # only knows its own run (its printed seconds stay per stream as dd_seconds). One stream: exactly what
    # dd printed, like the seed's figures, so a dd baseline and this engine compare like with like. The
    # durable figure stays wall time (dd start to fsync end, as `time dd && sync`); it includes dd's
    # start-up, so it is never below dd's own figure.
    if len(streams) == 1:
        result["seconds"] = streams[0]["dd_seconds"]
        if not durable:
            result["seconds_durable"] = result["seconds"]
    return result


def write(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Write job.size bytes to every stream at once with dd, then fsync each as its dd exits.
    Progress is logged every `every` seconds."""
    _check(job)
    pool = make_pool(job.size) if job.data == "random" else None
    try:
        argvs = [write_argv(job, s, pool or "/dev/zero") for s in job.streams]
        streams = _run(job, "write", argvs, every)
    finally:
        if pool:
            os.unlink(pool)
    lines = [f"{s['command']}  # then os.fsync({s['path']})" for s in streams]
    if pool:
        lines.insert(0, f"# {pool}: {job.size} random bytes (os.urandom), made before and deleted after the run")
    return _result(streams, "\n".join(lines), durable=True)


def read(job: Job, every: float = PROGRESS_SECONDS) -> dict:
    """Read job.size bytes of every stream at once with dd into /dev/null. Progress every `every` seconds."""
    _check(job)
    streams = _run(job, "read", [read_argv(job, s) for s in job.streams], every)
    return _result(streams, "\n".join(s["command"] for s in streams), durable=False)
