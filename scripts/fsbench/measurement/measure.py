"""Measuring on a target the device steps left: a cell as an engine job, the write (and how to recognise its
data again), the cold read of exactly that, a mixed cell's mix, the metadata test, and the rows they give.

Every function checks that the target is in the state the cell needs before it touches it.
"""

import errno
import hashlib
import mmap
import os
import shutil
import socket
from pathlib import Path

from fsbench.campaign.cells import MIXED, CellSpec
from fsbench.engines import metadata
from fsbench.engines.job import Job, Stream
from fsbench.engines.latency import COLUMNS as LATENCY_COLUMNS
from fsbench.engines.registry import run_engine, run_mixed
from fsbench.measurement import provenance, timeseries
from fsbench.measurement.rows import COLUMNS, flags_for, rate, with_flags
from fsbench.storage import arrays, cache, devices, telemetry
from fsbench.storage.arrays import Target

IDENTITY_BYTES = 4096  # the head of the data, hashed, to tell our data from anything else


def measure_metadata(target: Target, cell: CellSpec, workdir) -> dict:
    """The metadata test (fsbench.engines.metadata) in a folder of its own on the target; one row per phase."""
    _ready_for_io(target, cell, workdir)
    where = Path(target.array.path) if cell.target == "path" else Path(workdir) / "mnt"
    root = where / f"fsbench-{cell.test}-rep{cell.rep}"
    shutil.rmtree(root, ignore_errors=True)  # what an interrupted run left
    root.mkdir()
    job = metadata.MetaJob(
        root=str(root),
        streams=cell.streams,
        files=cell.files,
        file_size=cell.file_size,
        dirs=cell.dirs,
        fsync=cell.fsync,
        data=cell.data,
    )
    # stat and read must find inodes and dentries cold too: only dropping the kernel's caches (or a remount)
    # does that; fadvise and O_DIRECT reach file data only.
    method = "remount" if cell.cache == "remount" and target.mount else "drop"
    cold = lambda: make_cold(Job((), 1, 1), method, target, workdir)  # noqa: E731
    if cell.meta_cache == "warm":  # as mdtest runs: no drop between phases
        cold = lambda: "warm: no drop (metadata.cache warm)"  # noqa: E731
    try:
        found = metadata.run(job, cold)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for phase, figure in found["phases"].items():
        row = _row(cell, phase, figure, target, workload="metadata")
        row["flags"] = flags_for(row, figure["bytes"])
        rows.append(row)
    return {
        "rows": rows,
        "row": rows[0],
        "command": job.describe(),
        "streams": {phase: figure["streams"] for phase, figure in found["phases"].items()},
        "cold": found["cold"],
        "cell": cell.as_record(),
        "setup": target.as_record(),
        "machine": provenance.machine(),
    }


def job_for(target: Target, cell: CellSpec, workdir, op: str, written: list[int] = ()) -> Job:
    """The cell as an engine job: the bare device split into one region per stream, or one file per stream;
    with shared_file, one file (or the device from its start) that every stream moves its own blocks of.
    Time-based (runtime): the write (or a mixed cell's mix) runs for it, and the read covers `written`, the
    bytes each stream's write moved."""
    size, n, shared = cell.size, cell.streams, bool(cell.shared_file)
    # An all-hosts cell's file is shared by every host's streams: this host's take the slots from slot_base.
    base = cell.slot_base or 0
    if cell.target == "raw":
        dev = target.array.devices[0]
        streams = tuple(Stream(dev, 0, True, i) if shared else Stream(dev, i * size, True) for i in range(n))
    else:
        where = Path(target.array.path) if cell.target == "path" else Path(workdir) / "mnt"
        name = f"fsbench-{cell.test}-rep{cell.rep}"
        shared_path = str(where / f"{name}-shared.dat")
        streams = tuple(
            Stream(shared_path, 0, False, base + i) if shared else Stream(str(where / f"{name}-{i}.dat"))
            for i in range(n)
        )
    direct = cell.direct or (op == "read" and cell.cache == "direct")
    seed = int(hashlib.sha256(f"{cell.test}/{cell.rep}".encode()).hexdigest()[:8], 16)
    # A mixed cell's write lays its files down in order; its read step runs the mix, at random for randrw.
    pattern = cell.pattern
    mixed = pattern in MIXED
    if mixed:
        pattern = "seq" if op == "write" or pattern == "rw" else "rand"
    # The time bounds the measured write, or a mix (not a mix's layout); a read after it covers what it wrote.
    timed = (cell.runtime or 0.0) if (op == "write") != mixed else 0.0
    counts = tuple(b // cell.block_size for b in written) if cell.runtime and not mixed else ()
    return Job(
        streams=streams,
        size=size,
        block_size=cell.block_size,
        pattern=pattern,
        direct=direct,
        data=cell.data,
        seed=seed,
        iodepth=cell.iodepth or 1,
        slots=(cell.slots or n) if shared else 1,
        runtime=timed,
        counts=counts,
    )


def _ready_for_io(target: Target, cell: CellSpec, workdir) -> None:
    """Fail fast unless the array is in the state this cell needs: raw unmounted, or our filesystem mounted."""
    if cell.target == "path":
        if not os.path.isdir(target.array.path):
            raise devices.DeviceError(f"{target.array.path} is gone")
        return
    dev = target.array.devices[0]
    mnt = Path(workdir) / "mnt"
    current = devices.mount_at(mnt)
    if cell.target == "raw":
        if current:
            devices.unmount(mnt)
        arrays.check_writable(target.array, workdir)
        return
    uuid = target.filesystem.uuid
    if current is None or current.source != dev or devices.probe(dev)["uuid"] != uuid:
        raise devices.DeviceError(
            f"{mnt} no longer holds filesystem '{cell.target}' ({uuid}) from {dev}; "
            "another step changed the device in between"
        )


def _head(stream: Stream) -> str:
    """The hash of the data's first bytes, read without leaving them in the page cache: O_DIRECT where the
    filesystem has it (the read's cache check runs after this), else a plain read whose pages are then dropped."""
    buf = mmap.mmap(-1, IDENTITY_BYTES)  # page-aligned, as O_DIRECT needs
    try:
        fd = os.open(stream.path, os.O_RDONLY | os.O_DIRECT)
        try:
            return hashlib.sha256(buf[: os.preadv(fd, [buf], stream.offset)]).hexdigest()
        finally:
            os.close(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:  # EINVAL: no O_DIRECT here (tmpfs) or an unaligned offset
            raise
    fd = os.open(stream.path, os.O_RDONLY)
    try:
        digest = hashlib.sha256(os.pread(fd, IDENTITY_BYTES, stream.offset)).hexdigest()
        os.posix_fadvise(fd, stream.offset, IDENTITY_BYTES, os.POSIX_FADV_DONTNEED)
        return digest
    finally:
        os.close(fd)


def _members(target: Target) -> list[str]:
    """The devices whose counters show what the array moved: its members (under an md array too)."""
    return list(target.array.members)


def series_of(cell: CellSpec, result: dict) -> dict:
    """The measurement's time series at the cell's io.log_interval, judged with its io.drop and io.steady."""
    steady = cell.steady if cell.runtime else None  # the steady-state test is for time-based runs
    return judged_series(result, cell.log_interval, cell.drop, steady)


def judged_series(result: dict, log_interval=None, drop=None, steady=None) -> dict:
    """An engine's recorded series as the record keeps it (timeseries.series at log_interval, default 1 s), with
    what it says about the figure (`judged`: the drop found, and the steady-state test where `steady` asks)."""
    recorded = result.get("recorded_series") or {}
    ts = timeseries.series(recorded, result["seconds"], log_interval or timeseries.LOG_INTERVAL)
    if ts:
        ts["judged"] = timeseries.judge(ts, drop or timeseries.DROP_SHARE, steady)
    return ts


def series_flags(ts: dict) -> list[str]:
    """drop and not-steady, from the series' judgement."""
    judged = ts.get("judged", {})
    found = ["drop"] if judged.get("drop") else []
    if "steady" in judged and not judged["steady"]["steady"]:
        found.append("not-steady")
    return found


def _row(cell: CellSpec, op: str, result: dict, target: Target, workload: str = "io") -> dict:
    """One row of measurements.csv: the cell's columns, and the figure an engine (or the metadata test) gave."""
    settings = cell.as_record()
    row = {k: settings.get(k, "") for k in COLUMNS}
    row.update(
        workload=workload,
        op=op,
        host=socket.gethostname(),
        bytes=result["bytes"],
        seconds=result["seconds"],
        mb_s=rate(result["bytes"], result["seconds"]),
        seconds_durable=result["seconds_durable"],
        mb_s_durable=rate(result["bytes"], result["seconds_durable"]),
        cached_before=result.get("cached_before", float("nan")),
        started_at=result["started_at"],
        ops=result["ops"],
        iops=result["ops"] / result["seconds"] if result["seconds"] > 0 else float("nan"),
        **{k: result[k] for k in LATENCY_COLUMNS},
        **{k: result.get(k, float("nan")) for k in ("cpu_s_per_gb", "device_bytes", "write_amplification")},
    )
    if cell.target == "path":  # the filesystem the path lies on, as found (every row of the folder alike)
        row["fs_type"] = target.array.fs_type
    return row


def measurement_record(cell: CellSpec, op: str, result: dict, target: Target, **extra) -> dict:
    row = _row(cell, op, result, target)
    row["flags"] = flags_for(row, result.get("expected_bytes", cell.size * cell.streams), result["streams"])
    ts = extra.pop("timeseries", None) or series_of(cell, result)
    row["flags"] = with_flags(row["flags"], series_flags(ts))
    return {
        "row": row,
        "timeseries": ts,
        "command": result["command"],
        "streams": result["streams"],
        "cell": cell.as_record(),
        "setup": target.as_record(),
        "machine": provenance.machine(),
        **extra,
    }


def free_bytes(path) -> int:
    """Space a write under `path` may use: root may also fill the filesystem's reserved blocks."""
    st = os.statvfs(path)
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def measure_write(target: Target, cell: CellSpec, workdir) -> dict:
    """Write the cell's data (timing the flush too) and record how to recognise it again."""
    _ready_for_io(target, cell, workdir)
    job = job_for(target, cell, workdir, "write")
    files = list(dict.fromkeys(s.path for s in job.streams if not s.device))
    for path in files if not cell.shared_by_hosts else []:  # shared by hosts: made empty for them all
        Path(path).unlink(missing_ok=True)
    need = job.size * job.slots * len(files)
    where = Path(job.streams[0].path).parent
    if files:
        os.sync()  # btrfs gives back the space of deleted files (the previous cell's) only when it commits
    free = free_bytes(where) if files else 0
    if need > free:
        raise devices.DeviceError(
            f"not enough space on {cell.target}: the write needs {need} bytes, {free} bytes are free "
            f"at {where}; make more room or io.size smaller"
        )
    try:
        with telemetry.measured("write", _members(target)) as found:
            result = run_engine(cell.engine, "write", job)
        if job.runtime:
            result["expected_bytes"] = None  # as much as the time allowed, up to io.size
        result |= telemetry.columns("write", result["bytes"], found)
    except BaseException as e:
        for path in files:
            Path(path).unlink(missing_ok=True)  # a partial file must not pass for data, nor fill the disk
        if "No space left on device" in str(e) or getattr(e, "errno", None) == errno.ENOSPC:
            raise devices.DeviceError(
                f"ran out of space writing {need} bytes to {cell.target} ({free} bytes were free): {e}"
            ) from None
        raise
    identity = []
    for stream in job.streams:
        st = os.stat(stream.path)
        identity.append(
            {
                "path": stream.path,
                "offset": stream.offset,
                "st_dev": st.st_dev,
                "st_ino": st.st_ino,
                "size": st.st_size,
                "head_sha256": _head(stream),
            }
        )
    record = measurement_record(cell, "write", result, target, identity=identity)
    if cell.pattern in MIXED:  # the layout of a mix, not a measurement: the read step's mix gives its rows
        record |= {"rows": [], "layout": True}
    return record


def make_cold(job: Job, method: str, target: Target, workdir) -> str:
    """Empty the page cache of the job's files the way the campaign asks; returns what was done."""
    paths = sorted({s.path for s in job.streams})
    if method == "drop":
        cache.drop_cache(paths)
        return "sync; posix_fadvise(DONTNEED); echo 3 > /proc/sys/vm/drop_caches"
    if method == "fadvise":
        cache.fadvise_cache(paths)
        return "sync; posix_fadvise(DONTNEED)"
    if method == "remount" and target.mount:
        fs, mnt = target.filesystem, Path(workdir) / "mnt"
        devices.unmount(mnt)
        devices.ensure_mounted(target.array.devices[0], mnt, fs.fs_type, list(target.mount.asked), fs.uuid)
        return "umount; mount"
    if method == "remount":  # a bare device has no mount: its cache goes when its last opener closes it
        cache.fadvise_cache(paths)
        return "raw device: last close drops its cache; sync; posix_fadvise(DONTNEED)"
    return "O_DIRECT read (no cache drop)"


def measure_read(write_record: dict, cell: CellSpec, workdir) -> dict:
    """Read back exactly what the write made, from a cache emptied and then measured."""
    target = Target.from_record(write_record["setup"])
    _ready_for_io(target, cell, workdir)
    job = job_for(target, cell, workdir, "read", [s["bytes"] for s in write_record["streams"]])
    for stream, ident in zip(job.streams, write_record["identity"], strict=True):
        _check_identity(stream, ident)
    how = make_cold(job, cell.cache, target, workdir)
    for stream, ident in zip(job.streams, write_record["identity"], strict=True):
        _check_identity(stream, ident)  # again: a remount (cache: remount) must still find the same data
    cached = [cache.resident_fraction(s.path, job.size * job.slots, s.offset) for s in job.streams]
    if cell.pattern in MIXED:
        return _measure_mix(job, cell, target, how, cached)
    with telemetry.measured("read", _members(target)) as found:
        result = run_engine(cell.engine, "read", job) | {"cached_before": sum(cached) / len(cached)}
    if job.counts:  # what the time-based write moved
        result["expected_bytes"] = sum(job.counts) * job.block_size
    result |= telemetry.columns("read", result["bytes"], found)
    for path in dict.fromkeys(s.path for s in job.streams if not s.device and not cell.shared_by_hosts):
        os.unlink(path)  # keep the filesystem's free space the same for the next cell (shared by hosts: later)
    return measurement_record(cell, "read", result, target, cache_method=how, cached_before_per_stream=cached)


def _measure_mix(job: Job, cell: CellSpec, target: Target, how: str, cached: list) -> dict:
    """A mixed cell's measurement, on the files its write laid down and from a cold cache: two rows, op read
    and op write, of the same run."""
    members = _members(target)
    with telemetry.measured("read", members) as reads, telemetry.measured("write", members) as writes:
        found = run_mixed(cell.engine, job, cell.rwmix_read)
    total = found["read"]["bytes"] + found["write"]["bytes"]
    rows, series = [], {}
    for op, seen in (("read", reads), ("write", writes)):
        result = (
            found[op] | {"cached_before": sum(cached) / len(cached)} | telemetry.columns(op, found[op]["bytes"], seen)
        )
        result["cpu_s_per_gb"] = seen["cpu_seconds"] / (total / 1e9) if total else float("nan")  # one run's CPU
        row = _row(cell, op, result, target)
        series[op] = series_of(cell, result)
        # a mix moves its share of the cell's bytes each way
        row["flags"] = with_flags(flags_for(row, row["bytes"]), series_flags(series[op]))
        rows.append(row)
    for path in dict.fromkeys(s.path for s in job.streams if not s.device and not cell.shared_by_hosts):
        os.unlink(path)
    more = {"cache_method": how, "cached_before_per_stream": cached, "timeseries": series["read"]}
    record = measurement_record(cell, "read", found["read"], target, **more)
    write = {k: v for k, v in found["write"].items() if k != "recorded_series"}
    mix = {"rwmix_read": cell.rwmix_read, "write": write | {"timeseries": series["write"]}}
    return record | {"row": rows[0], "rows": rows, "mix": mix}


def _check_identity(stream: Stream, ident: dict) -> None:
    """The file (or device region) must be the one the write made: same inode and size, same first bytes."""
    problems = []
    if not os.path.exists(stream.path):
        problems.append("it is gone")
    else:
        st = os.stat(stream.path)
        if not stream.device and (st.st_dev, st.st_ino, st.st_size) != (
            ident["st_dev"],
            ident["st_ino"],
            ident["size"],
        ):
            problems.append("its inode or size changed")
        if _head(stream) != ident["head_sha256"]:
            problems.append("its first bytes are not the ones written")
    if problems:
        raise devices.DeviceError(
            f"refusing to read {stream.path}: it is not what its write made ({'; '.join(problems)}); "
            "rerun so that the write is measured again"
        )
