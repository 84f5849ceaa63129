"""The device steps of a cell as plain functions: prepare_array, precondition, mkfs, mount, write, read, metadata.

Each takes the cell's settings and the record of the step before it, checks that the real state is what
that record says (sysfs, blkid, mountinfo, the file's inode) instead of trusting the files that connect
the steps in the DAG, acts (the measuring itself is fsbench.measurement.measure), and returns its own record. A step
script in scripts/ only unpacks `snakemake.params` and writes what these return; its log gets a few lines a
person reads.
"""

import logging
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from fsbench.campaign.cells import CellSpec
from fsbench.cluster.hosts import check_host
from fsbench.engines import table
from fsbench.engines.job import Job, Stream
from fsbench.measurement import judgement, measure, provenance
from fsbench.measurement.rows import rate
from fsbench.storage import arrays, devices
from fsbench.storage.arrays import ArrayState, Filesystem, Target

log = logging.getLogger("fsbench")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def prepare_array(spec: dict, name: str, host: str, workdir) -> dict:
    """Make the array (loop images, md) and record what it is: devices, sizes, models, loop backing."""
    check_host(host)
    started, t0 = _now(), time.perf_counter()
    state = arrays.attach(spec, workdir, name)
    for info in state.info:
        log.info("%s: %s", name, ", ".join(f"{k} {v}" for k, v in info.items() if v != ""))
    return {
        "step": "prepare_array",
        "array": name,
        "host": host,
        "spec": spec,
        "state": state.as_record(),
        "started_at": started,
        "seconds": time.perf_counter() - t0,
        "machine": provenance.machine(),
    }


def precondition(spec: dict, array_spec: dict, array_record: dict, name: str, host: str, workdir, log_interval=None):
    """Write the whole array spec["passes"] times (SNIA's workload-independent preconditioning), in
    spec["block_size"] blocks, seq or (each block once per pass) rand, O_DIRECT, every device at once, with the
    python engine; each pass's figure and time series recorded. Meaningful on real devices (an SSD's flash
    translation layer, a RAID's parity): a loop image over a file only fills its file."""
    check_host(host)
    state = arrays.attach(array_spec, workdir, name)
    if state.devices != tuple(array_record["state"]["devices"]):
        log.info("array %s brought up again: %s", name, ", ".join(state.devices))
    bs = spec["block_size"]
    size = min(devices.device_size(d) for d in state.devices) // bs * bs
    started, t0, passes = _now(), time.perf_counter(), []
    for k in range(1, spec["passes"] + 1):
        arrays.check_writable(state, workdir, f"arrays.{name}")
        job = Job(
            tuple(Stream(d, 0, True) for d in state.devices), size, bs, pattern=spec["pattern"], direct=True, seed=k
        )
        result = table.run("python", "write", job)
        series = judgement.judged_series(result, log_interval)
        figure = {
            "pass": k,
            "bytes": result["bytes"],
            "seconds": result["seconds"],
            "seconds_durable": result["seconds_durable"],
            "mb_s": rate(result["bytes"], result["seconds_durable"]),
            "started_at": result["started_at"],
            "command": result["command"],
            "timeseries": series,
        }
        passes.append(figure)
        log.info(
            "pass %d of %d: %d bytes in %.2f s = %.1f MB/s (durable)%s",
            k,
            spec["passes"],
            figure["bytes"],
            figure["seconds_durable"],
            figure["mb_s"],
            "; its series has a drop" if series.get("judged", {}).get("drop") else "",
        )
    return {
        "step": "precondition",
        "array": name,
        "host": host,
        "spec": spec,
        "devices": list(state.devices),
        "bytes_per_device": size,
        "passes": passes,
        "started_at": started,
        "seconds": time.perf_counter() - t0,
        "machine": provenance.machine(),
    }


def bring_up(cell: CellSpec, array_record: dict, workdir) -> ArrayState:
    """The array as prepare_array recorded it, attached again if a release took it down since."""
    check_host(cell.host)
    state = arrays.attach(cell.array_spec, workdir, cell.array)
    recorded = tuple(array_record["state"]["devices"])
    if state.devices != recorded:
        log.info(
            "array %s brought up again: %s (recorded as %s)",
            cell.array,
            ", ".join(state.devices),
            ", ".join(recorded),
        )
    return state


def mkfs(cell: CellSpec, array_record: dict, workdir) -> dict:
    """Make the cell's filesystem, unless the device already holds exactly it, made in this round.

    Each round (repeat) makes every filesystem afresh; the round's later cells of that filesystem reuse it.
    """
    state = bring_up(cell, array_record, workdir)
    fs = cell.fs
    started, t0 = _now(), time.perf_counter()
    made = devices.ensure_filesystem(
        list(state.devices),
        Path(workdir) / "mnt",
        fs["type"],
        fs["mkfs"],
        f"{fs['fingerprint']}/rep{cell.rep}",
        Path(workdir) / "filesystem.json",
        guard=lambda: arrays.check_writable(state, workdir),
        discard=cell.array_spec["kind"] != "loop",  # a discard would punch holes in the preallocated images
    )
    seconds = time.perf_counter() - t0
    if made["made_now"]:
        log.info("made %s on %s in %.2f s: %s", fs["type"], state.devices[0], seconds, " ".join(made["mkfs_argv"]))
    else:
        log.info(
            "reused %s %s on %s, made for this round by an earlier cell", fs["type"], made["uuid"], state.devices[0]
        )
    filesystem = Filesystem.from_record(made)
    return {
        "step": "mkfs",
        "cell": cell.as_record(),
        "made": made["made_now"],
        "started_at": started,
        "seconds": seconds,
        "array": state.as_record(),
        "filesystem": filesystem.as_record(),
    }


def mount(cell: CellSpec, mkfs_record: dict, workdir) -> dict:
    """Mount the filesystem mkfs made (or find it mounted as asked); the kernel's view of the options kept."""
    check_host(cell.host)
    state, fs = ArrayState.from_record(mkfs_record["array"]), Filesystem.from_record(mkfs_record["filesystem"])
    arrays.check_writable(state, workdir, f"arrays.{cell.array}")
    dev, mnt = state.devices[0], Path(workdir) / "mnt"
    found = devices.probe(dev)["uuid"]
    if found != fs.uuid:
        raise devices.DeviceError(
            f"{dev} no longer holds the {fs.fs_type} filesystem {fs.uuid} that mkfs made (found "
            f"{found or 'none'}): another step changed the device in between"
        )
    before = devices.mount_at(mnt)
    started, t0 = _now(), time.perf_counter()
    current = devices.ensure_mounted(dev, mnt, fs.fs_type, cell.fs["mount"], fs.uuid)
    mounted_now = before is None or before.source != dev
    asked = ",".join(cell.fs["mount"]) or "defaults"
    log.info(
        "%s %s at %s; asked %s, the kernel reports %s",
        "mounted" if mounted_now else "found mounted",
        dev,
        mnt,
        asked,
        current.options,
    )
    return {
        "step": "mount",
        "cell": cell.as_record(),
        "mounted": mounted_now,
        "started_at": started,
        "seconds": time.perf_counter() - t0,
        "array": state.as_record(),
        "filesystem": fs.as_record(),
        "mount": replace(current, asked=tuple(cell.fs["mount"])).as_record(),
    }


def target_for_write(cell: CellSpec, record: dict, workdir) -> Target:
    """What the write works on, from the step before it: the mount (filesystems), or the array (raw, path)."""
    if record["step"] == "mount":
        return Target.from_record(record["array"] | {"filesystem": record["filesystem"], "mount": record["mount"]})
    state = bring_up(cell, record, workdir)
    if cell.target == "path":
        state = arrays.data_folder(state, workdir, cell.array_spec.get("layout"), f"arrays.{cell.array}")
    return Target(state)


def write(cell: CellSpec, record: dict, workdir) -> dict:
    """The write step: the cell's data written (and flushed) on the state the step before left."""
    written = measure.measure_write(target_for_write(cell, record, workdir), cell, workdir)
    _log_figure(written)
    return written


def read(cell: CellSpec, write_record: dict, workdir) -> dict:
    """The read step: what the write made, read back from a cache made cold and then measured."""
    check_host(cell.host)
    done = measure.measure_read(write_record, cell, workdir)
    _log_figure(done)
    return done


def metadata_step(cell: CellSpec, record: dict, workdir) -> dict:
    """The metadata step: many small files created, stat'ed, read and deleted where the step before left the
    target (its mount, or the path array)."""
    done = measure.measure_metadata(target_for_write(cell, record, workdir), cell, workdir)
    for row in done["rows"]:
        log.info("%s: %d files in %.2f s, %.0f files/s", row["op"], row["ops"], row["seconds"], row["iops"])
    return done


def run_cell(cell: CellSpec, workdir) -> dict:
    """Every step of one cell in order without Snakemake (a library user, the tests): the records by step."""
    records = {"prepare_array": prepare_array(cell.array_spec, cell.array, cell.host, workdir)}
    before = records["prepare_array"]
    if cell.fs:
        records["mkfs"] = mkfs(cell, before, workdir)
        records["mount"] = before = mount(cell, records["mkfs"], workdir)
    records["write"] = write(cell, before, workdir)
    records["read"] = read(cell, records["write"], workdir)
    return records


def _log_figure(record: dict) -> None:
    row = record["row"]
    log.info(
        "%s: %d bytes in %.3f s = %.1f MB/s (%.3f s = %.1f MB/s durable)%s",
        row["op"],
        row["bytes"],
        row["seconds"],
        row["mb_s"],
        row["seconds_durable"],
        row["mb_s_durable"],
        f"; flags: {row['flags']}" if row["flags"] else "",
    )
    log.info("command: %s", record["command"])
