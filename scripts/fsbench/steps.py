"""The workflow's steps as plain functions: each takes settings, acts on the real system, returns a record.

A step script in scripts/ only unpacks `snakemake.params` and writes what these return.
Every step checks the real state it depends on (sysfs, mountinfo, blkid, the file's inode)
instead of trusting the flag files that connect the steps in the DAG.
"""

import errno
import hashlib
import importlib
import os
import socket
from pathlib import Path

from . import devices, engine, guards, provenance
from .config import ALL_HOSTS, LOCAL, hosts
from .records import COLUMNS, flags_for, rate, write_json
from .system import output, run

IDENTITY_BYTES = 4096  # the head of the data, hashed, to tell our data from anything else
ENGINES = {"python": "engine", "dd": "ddengine", "fio": "fioengine"}


def array_dir(scratch: str, campaign: str, array: str, host: str = LOCAL) -> Path:
    """Where an array's images and mount point live: <scratch>/<campaign>/<array>, and <array>.<host> when
    the campaign names hosts, so that a scratch directory (or a path array) shared by several nodes never
    mixes their loop images or data."""
    return Path(scratch) / campaign / (array if host == LOCAL else f"{array}.{host}")


def workdirs_here(config: dict) -> list[Path]:
    """Every folder of the campaign that may hold something on this host: its arrays as measured from here,
    and its share of all-hosts cells. Another node's folders are released on that node."""
    here = short_hostname()
    names = [h for h in hosts(config) if h in (LOCAL, here)] + [part_host(here)]
    return [array_dir(config["scratch"], config["campaign"], a, h) for h in names for a in config["arrays"]]


def part_host(host: str) -> str:
    """The host segment of a host's own folder for its share of all-hosts cells (fsbench.together)."""
    return f"{ALL_HOSTS}-{host}"


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def check_host(host: str) -> None:
    """A cell for a named host must run there: on Slurm its job is pinned with --nodelist."""
    here = socket.gethostname()
    if host not in (LOCAL, here, short_hostname()):
        raise devices.DeviceError(
            f"this cell is for host '{host}' but runs on '{here}': with hosts in the campaign, run it "
            "through Slurm (--profile profiles/slurm) so that each host's cells land on that node"
        )


def measure_cell(cell: dict, workdir) -> dict:
    """One cell and repeat, start to end: the array set up as the cell needs it (each step a no-op when it
    already is), then the write, then the read of what was written."""
    check_host(cell["host"])
    state = attach(cell["array_spec"], workdir, cell["array"])
    if cell["fs"]:
        state = mount(make_filesystem(state, cell["fs"], workdir), cell["fs"], workdir)
    written = measure_write(state, cell, workdir)
    return {"write": written, "read": measure_read(written, cell, workdir)}


def attach(array: dict, workdir, name: str = "") -> dict:
    """Bring the array's devices up (or check its directory); returns them with what sysfs says of them.

    Every check runs before anything is written: a real device must pass the guards, and an md array
    is refused at once where the kernel has no md driver.
    """
    kind, key = array["kind"], f"arrays.{name}"
    if kind == "path":
        return attach_path(array["path"], workdir, key)
    if kind == "loop":
        devs = devices.attach_loop_images(Path(workdir) / "images", array["members"], array["size"])
    else:
        devs = [array["device"]] if kind == "device" else array["devices"]
    state = {"kind": kind, "devices": devs, "members": devs}
    check_writable(state, workdir, key)
    if kind == "mdadm" or array.get("level") is not None:
        why = guards.md_support()
        if why:
            raise devices.DeviceError(f"{key} (kind {kind}, RAID {array['level']}): {why}; nothing was written")
        md = assemble_md(devs, array, workdir)
        state |= {"devices": [md], "md": md}
    return state | {"info": [device_info(d) for d in state["devices"]]}


def check_writable(state: dict, workdir, key: str = "array") -> None:
    """Refuse to write unless every member is ours: a loop image of this campaign, or a device passing the guards."""
    own = str((Path(workdir) / "mnt").resolve())  # our own mount of it is no objection
    if "md" in state:  # the members are held by our own md array now: that array must be free
        guards.check_device(state["md"], [state["md"]], key, own_mount=own)
        return
    for dev in state["members"]:
        if state["kind"] == "loop":
            devices.check_ours(dev, workdir)
        else:  # listed in allow_destroy: checked with the config
            guards.check_device(dev, state["members"], key, own_mount=own)


def assemble_md(members: list[str], array: dict, workdir) -> str:
    """Create the md array over `members` (not reached on kernels without md: attach stops before)."""
    md = guards.md_name(Path(workdir).parent.name, Path(workdir).name)
    if not os.path.exists(md):
        run(guards.mdadm_create_argv(md, array["level"], array["chunk"], members))
    write_json(Path(workdir) / "md.json", {"md": md, "members": members})
    return md


def attach_path(path: str, workdir, key: str) -> dict:
    """A directory on an existing filesystem: nothing to attach, make or mount; fsbench writes in a subfolder."""
    if not os.path.isdir(path):
        raise devices.DeviceError(f"{key}.path: {path} is not an existing directory")
    data = Path(path) / f"fsbench-{Path(workdir).parent.name}-{Path(workdir).name}"
    data.mkdir(exist_ok=True)
    write_json(Path(workdir) / "path.json", {"data": str(data)})  # for release
    fs_type = output(["findmnt", "-n", "-o", "FSTYPE", "-T", str(data)])
    source = output(["findmnt", "-n", "-o", "SOURCE", "-T", str(data)])
    return {"kind": "path", "devices": [], "members": [], "path": str(data), "fs_type": fs_type,
            "info": [{"path": path, "fs_type": fs_type, "source": source}]}  # fmt: skip


def device_info(dev: str) -> dict:
    """What the kernel says about a block device: size, model, queue settings, loop backing."""
    name = Path(os.path.realpath(dev)).name
    sys_block = Path("/sys/class/block") / name

    def read(rel: str) -> str:
        try:
            return (sys_block / rel).read_text().strip()
        except OSError:
            return ""

    info = {
        "device": dev,
        "size_bytes": int(read("size") or 0) * 512,
        "model": read("device/model") or ("loop" if name.startswith("loop") else ""),
        "rotational": read("queue/rotational"),
        "scheduler": read("queue/scheduler"),
        "logical_block_size": read("queue/logical_block_size"),
        "max_sectors_kb": read("queue/max_sectors_kb"),
    }
    if name.startswith("loop"):
        info["loop_backing_file"] = read("loop/backing_file")
        info["loop_direct_io"] = read("loop/dio")
    return info


def make_filesystem(state: dict, fs: dict, workdir) -> dict:
    """Make `fs` on the array unless it already holds exactly that filesystem."""
    made = devices.ensure_filesystem(
        state["devices"], Path(workdir) / "mnt", fs["type"], fs["mkfs"], fs["fingerprint"],
        Path(workdir) / "filesystem.json", guard=lambda: check_writable(state, workdir),
    )  # fmt: skip
    return state | {"filesystem": made}


def mount(state: dict, fs: dict, workdir) -> dict:
    made = state["filesystem"]
    found = devices.ensure_mounted(state["devices"][0], Path(workdir) / "mnt", fs["type"], fs["mount"], made["uuid"])
    return state | {"mount": {"mountpoint": found.mountpoint, "options": found.options, "asked": fs["mount"]}}


def job_for(state: dict, cell: dict, workdir, op: str) -> engine.Job:
    """The cell as an engine job: the bare device split into one region per stream, or one file per stream."""
    size, n = cell["size"], cell["streams"]
    if cell["target"] == "raw":
        streams = tuple(engine.Stream(state["devices"][0], i * size, True) for i in range(n))
    else:
        where = Path(state["path"]) if cell["target"] == "path" else Path(workdir) / "mnt"
        name = f"fsbench-{cell['test']}-rep{cell['rep']}"
        streams = tuple(engine.Stream(str(where / f"{name}-{i}.dat")) for i in range(n))
    direct = cell["direct"] or (op == "read" and cell["cache"] == "direct")
    seed = int(hashlib.sha256(f"{cell['test']}/{cell['rep']}".encode()).hexdigest()[:8], 16)
    return engine.Job(streams, size, cell["block_size"], cell["pattern"], direct, cell["data"], seed)


def run_engine(name: str, op: str, job: engine.Job) -> dict:
    module = importlib.import_module(f".{ENGINES[name]}", __package__)
    return getattr(module, op)(job)


def _check_state(state: dict, cell: dict, workdir) -> None:
    """Fail fast unless the array is in the state this cell needs: raw unmounted, or our filesystem mounted."""
    if cell["target"] == "path":
        if not os.path.isdir(state["path"]):
            raise devices.DeviceError(f"{state['path']} is gone")
        return
    dev = state["devices"][0]
    mnt = Path(workdir) / "mnt"
    current = devices.mount_at(mnt)
    if cell["target"] == "raw":
        if current:
            devices.unmount(mnt)
        check_writable(state, workdir)
        return
    uuid = state["filesystem"]["uuid"]
    if current is None or current.source != dev or devices.probe(dev)["uuid"] != uuid:
        raise devices.DeviceError(
            f"{mnt} no longer holds filesystem '{cell['target']}' ({uuid}) from {dev}; "
            "another step changed the device in between"
        )


def _head(stream: engine.Stream) -> str:
    with open(stream.path, "rb") as f:
        f.seek(stream.offset)
        return hashlib.sha256(f.read(IDENTITY_BYTES)).hexdigest()


def _row(cell: dict, op: str, result: dict) -> dict:
    row = {k: cell.get(k, "") for k in COLUMNS}
    row.update(
        op=op,
        host=socket.gethostname(),
        bytes=result["bytes"],
        seconds=result["seconds"],
        mb_s=rate(result["bytes"], result["seconds"]),
        seconds_durable=result["seconds_durable"],
        mb_s_durable=rate(result["bytes"], result["seconds_durable"]),
        cached_before=result.get("cached_before", float("nan")),
        started_at=result["started_at"],
    )
    row["flags"] = flags_for(row, cell["size"] * cell["streams"])
    return row


def _record(cell: dict, op: str, result: dict, state: dict, **extra) -> dict:
    row = _row(cell, op, result) | ({"fs_type": state["fs_type"]} if cell["target"] == "path" else {})
    return {"row": row, "command": result["command"], "streams": result["streams"],
            "cell": cell, "setup": state, "machine": provenance.machine(), **extra}  # fmt: skip


def free_bytes(path) -> int:
    """Space a write under `path` may use: root may also fill the filesystem's reserved blocks."""
    st = os.statvfs(path)
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def measure_write(state: dict, cell: dict, workdir) -> dict:
    """Write the cell's data (timing the flush too) and record how to recognise it again."""
    _check_state(state, cell, workdir)
    job = job_for(state, cell, workdir, "write")
    files = [s.path for s in job.streams if not s.device]
    for path in files:
        Path(path).unlink(missing_ok=True)
    need = job.size * len(files)
    where = Path(job.streams[0].path).parent
    if files:
        os.sync()  # btrfs gives back the space of deleted files (the previous cell's) only when it commits
    free = free_bytes(where) if files else 0
    if need > free:
        raise devices.DeviceError(
            f"not enough space on {cell['target']}: the write needs {need} bytes, {free} bytes are free "
            f"at {where}; make more room or io.size smaller"
        )
    try:
        result = run_engine(cell["engine"], "write", job)
    except BaseException as e:
        for path in files:
            Path(path).unlink(missing_ok=True)  # a partial file must not pass for data, nor fill the disk
        if "No space left on device" in str(e) or getattr(e, "errno", None) == errno.ENOSPC:
            raise devices.DeviceError(
                f"ran out of space writing {need} bytes to {cell['target']} ({free} bytes were free): {e}"
            ) from None
        raise
    identity = []
    for stream in job.streams:
        st = os.stat(stream.path)
        identity.append({"path": stream.path, "offset": stream.offset, "st_dev": st.st_dev, "st_ino": st.st_ino,
                         "size": st.st_size, "head_sha256": _head(stream)})  # fmt: skip
    return _record(cell, "write", result, state, identity=identity)


def make_cold(job: engine.Job, method: str, state: dict, workdir) -> str:
    """Empty the page cache of the job's files the way the campaign asks; returns what was done."""
    paths = sorted({s.path for s in job.streams})
    if method == "drop":
        engine.drop_cache(paths)
        return "sync; posix_fadvise(DONTNEED); echo 3 > /proc/sys/vm/drop_caches"
    if method == "fadvise":
        engine.fadvise_cache(paths)
        return "sync; posix_fadvise(DONTNEED)"
    if method == "remount" and "mount" in state:
        fs = state["filesystem"]
        mnt = Path(workdir) / "mnt"
        devices.unmount(mnt)
        devices.ensure_mounted(state["devices"][0], mnt, fs["fs_type"], state["mount"]["asked"], fs["uuid"])
        return "umount; mount"
    if method == "remount":  # a bare device has no mount: its cache goes when its last opener closes it
        engine.fadvise_cache(paths)
        return "raw device: last close drops its cache; sync; posix_fadvise(DONTNEED)"
    return "O_DIRECT read (no cache drop)"


def measure_read(write_record: dict, cell: dict, workdir) -> dict:
    """Read back exactly what the write made, from a cache emptied and then measured."""
    state = write_record["setup"]
    _check_state(state, cell, workdir)
    job = job_for(state, cell, workdir, "read")
    for stream, ident in zip(job.streams, write_record["identity"], strict=True):
        _check_identity(stream, ident)
    how = make_cold(job, cell["cache"], state, workdir)
    cached = [engine.resident_fraction(s.path, job.size, s.offset) for s in job.streams]
    result = run_engine(cell["engine"], "read", job) | {"cached_before": sum(cached) / len(cached)}
    for stream in job.streams:
        if not stream.device:
            os.unlink(stream.path)  # keep the filesystem's free space the same for the next cell
    return _record(cell, "read", result, state, cache_method=how, cached_before_per_stream=cached)


def _check_identity(stream: engine.Stream, ident: dict) -> None:
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
