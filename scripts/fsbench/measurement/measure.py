"""Measuring on a target the device steps left: the write (and how to recognise its data again), the cold read
of exactly that, a mixed cell's mix, and the metadata test. The cell's job is measurement.cell_job, the checks
that the target and data are the expected ones measurement.identity, the cold cache measurement.cold, the series
judgement measurement.judgement, the row and record measurement.record.

Every function checks that the target is in the state the cell needs before it touches it.
"""

import errno
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from fsbench.campaign.cells import MIXED, CellSpec
from fsbench.engines import metadata, table, verify
from fsbench.engines.job import Job
from fsbench.measurement import provenance
from fsbench.measurement.cell_job import job_for, verified
from fsbench.measurement.cold import make_cold
from fsbench.measurement.identity import check_identity, identify, ready_for_io
from fsbench.measurement.judgement import series_flags, series_of
from fsbench.measurement.record import measurement_record, row_of
from fsbench.storage import cache, client_cache, devices, telemetry
from fsbench.storage.arrays import Target
from fsbench.toolkit import flags


def measure_metadata(target: Target, cell: CellSpec, workdir) -> dict:
    """The metadata test (fsbench.engines.metadata) in a folder of its own on the target; one row per phase."""
    ready_for_io(target, cell, workdir)
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
        verify=verify.signatures(secrets.randbits(62), 0, 1)[0] if cell.verify else 0,
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
        row = row_of(cell, phase, figure, target, workload="metadata")
        row["flags"] = flags.doubts(row, figure["bytes"])
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


def _members(target: Target) -> list[str]:
    """The devices whose counters show what the array moved: its members (under an md array too)."""
    return list(target.array.members)


def free_bytes(path) -> int:
    """Space a write under `path` may use: root may also fill the filesystem's reserved blocks."""
    st = os.statvfs(path)
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def measure_write(target: Target, cell: CellSpec, workdir, ready: Callable[[], None] = lambda: None) -> dict:
    """Write the cell's data (timing the flush too) and record how to recognise it again. `ready` is called once
    everything but the write is done (an all-hosts part's start line: no host's setup delays another's start)."""
    ready_for_io(target, cell, workdir)
    job, signed = verified(job_for(target, cell, workdir, "write"), cell)
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
    ready()
    try:
        with telemetry.measured("write", _members(target)) as found:
            result = table.run(cell.engine, "write", job) | {"expected_bytes": job.expected_bytes("write")}
        result |= telemetry.columns("write", result["bytes"], found)
    except BaseException as e:
        for path in files:
            Path(path).unlink(missing_ok=True)  # a partial file must not pass for data, nor fill the disk
        if "No space left on device" in str(e) or getattr(e, "errno", None) == errno.ENOSPC:
            raise devices.DeviceError(
                f"ran out of space writing {need} bytes to {cell.target} ({free} bytes were free): {e}"
            ) from None
        raise
    identity = identify(job)
    record = measurement_record(cell, "write", result, target, identity=identity, **signed)
    if cell.pattern in MIXED:  # the layout of a mix, not a measurement: the read step's mix gives its rows
        record |= {"rows": [], "layout": True}
    return record


def measure_read(
    write_record: dict, cell: CellSpec, workdir, other_host: str | None = None, ready: Callable[[], None] = lambda: None
) -> dict:
    """Read back exactly what the write made, from a cache emptied and then measured. With io.read_from other:
    on one host stream i reads what stream i+1 wrote; an all-hosts part reads `other_host`'s write record.
    `ready` is called once the cache is cold and measured, just before the read (as measure_write's)."""
    target = Target.from_record(write_record["setup"])
    ready_for_io(target, cell, workdir)
    job = job_for(target, cell, workdir, "read", [s["bytes"] for s in write_record["streams"]])
    job, _ = verified(job, cell, write_record.get("verify"))  # what the write's (another host's) blocks carry
    identity, whose = write_record["identity"], None
    if cell.read_from == "other" and other_host is None:
        job, identity, whose = read_other_stream(job, identity)
    elif other_host is not None:
        whose = [
            {"stream": i, "read": s.path, "written_by": f"{other_host} stream {i}"} for i, s in enumerate(job.streams)
        ]
    for stream, ident in zip(job.streams, identity, strict=True):
        check_identity(stream, ident, other_host is not None)
    how = make_cold(job, cell.cache, target, workdir)
    for stream, ident in zip(job.streams, identity, strict=True):
        check_identity(stream, ident, other_host is not None)  # again: a remount must still find the same data
    cached = [cache.resident_fraction(s.path, job.size * job.slots, s.offset) for s in job.streams]
    # a client's own cache (ceph-fuse's), which neither the drop nor mincore reaches
    client = client_cache.state(target.array.fs_type, job.streams[0].path) if cell.target == "path" else None
    ready()
    if cell.pattern in MIXED:
        return _client_cached(_measure_mix(job, cell, target, how, cached), client, other_host is None)
    with telemetry.measured("read", _members(target)) as found:
        result = table.run(cell.engine, "read", job) | {"cached_before": sum(cached) / len(cached)}
    result["expected_bytes"] = job.expected_bytes("read")  # after a time-based write: what it moved
    result |= telemetry.columns("read", result["bytes"], found)
    for path in dict.fromkeys(s.path for s in job.streams if not s.device and not cell.shared_by_hosts):
        os.unlink(path)  # keep the filesystem's free space the same for the next cell (shared by hosts: later)
    more = {"read_from": whose} if whose else {}
    record = measurement_record(cell, "read", result, target, cache_method=how, cached_before_per_stream=cached, **more)
    return _client_cached(record, client, other_host is None)


def _client_cached(record: dict, client: dict | None, own_data: bool) -> dict:
    """The read's record with what its filesystem's client said of its own cache, and flagged client-cache
    where that cache may have answered (fsbench.storage.client_cache)."""
    if client is None:
        return record
    if client_cache.unproven_cold(client, own_data):
        for row in record.get("rows", [record["row"]]):  # a mix's rows (its read and write) are of one run
            row["flags"] = flags.add(row["flags"], [flags.CLIENT_CACHE])
    return record | {"client_cache": client}


def read_other_stream(job: Job, identity: list) -> tuple[Job, list, list]:
    """IOR's -C on one host: stream i reads what stream i+1 wrote (its file, region or slot, and as many blocks),
    so that no stream reads pages it wrote itself. Returns the job, the identities in its new order, and who
    read what."""
    n = len(job.streams)
    order = [(i + 1) % n for i in range(n)]
    moved = replace(
        job,
        streams=tuple(job.streams[k] for k in order),
        counts=tuple(job.counts[k] for k in order) if job.counts else (),
        verify=tuple(job.verify[k] for k in order) if job.verify else (),
    )
    whose = [{"stream": i, "read": job.streams[k].path, "written_by": f"stream {k}"} for i, k in enumerate(order)]
    return moved, [identity[k] for k in order], whose


def _measure_mix(job: Job, cell: CellSpec, target: Target, how: str, cached: list) -> dict:
    """A mixed cell's measurement, on the files its write laid down and from a cold cache: two rows, op read
    and op write, of the same run."""
    members = _members(target)
    with telemetry.measured("read", members) as reads, telemetry.measured("write", members) as writes:
        found = table.run(cell.engine, "mixed", job, cell.rwmix_read)
    total = found["read"]["bytes"] + found["write"]["bytes"]
    rows, series = [], {}
    for op, seen in (("read", reads), ("write", writes)):
        result = (
            found[op] | {"cached_before": sum(cached) / len(cached)} | telemetry.columns(op, found[op]["bytes"], seen)
        )
        result["cpu_s_per_gb"] = seen["cpu_seconds"] / (total / 1e9) if total else float("nan")  # one run's CPU
        row = row_of(cell, op, result, target)
        series[op] = series_of(cell, result)
        # a mix moves its share of the cell's bytes each way
        row["flags"] = flags.add(flags.doubts(row, row["bytes"]), series_flags(series[op]))
        rows.append(row)
    for path in dict.fromkeys(s.path for s in job.streams if not s.device and not cell.shared_by_hosts):
        os.unlink(path)
    more = {"cache_method": how, "cached_before_per_stream": cached, "timeseries": series["read"]}
    record = measurement_record(cell, "read", found["read"], target, **more)
    write = {k: v for k, v in found["write"].items() if k != "recorded_series"}
    mix = {"rwmix_read": cell.rwmix_read, "write": write | {"timeseries": series["write"]}}
    return record | {"row": rows[0], "rows": rows, "mix": mix}
