"""The workflow's steps as plain functions: each takes settings, acts on the real system, returns a record.

A step script in scripts/ only unpacks `snakemake.params` and writes what these return.
Every step checks the real state it depends on (sysfs, mountinfo, blkid, the file's inode)
instead of trusting the flag files that connect the steps in the DAG.
"""

import hashlib
import os
import socket
from pathlib import Path

from . import devices, engine
from .records import COLUMNS, flags_for, rate

IDENTITY_BYTES = 4096  # the head of the data, hashed, to tell our data from anything else


def array_dir(scratch: str, campaign: str, array: str) -> Path:
    return Path(scratch) / campaign / array


def attach(array: dict, workdir) -> dict:
    """Bring the array's devices up; returns them with what sysfs says about them."""
    devs = devices.attach_loop_images(Path(workdir) / "images", array["members"], array["size"])
    for dev in devs:
        devices.check_ours(dev, workdir)
    return {"devices": devs, "info": [device_info(d) for d in devs]}


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
    for dev in state["devices"]:
        devices.check_ours(dev, workdir)
    made = devices.ensure_filesystem(
        state["devices"], Path(workdir) / "mnt", fs["type"], fs["mkfs"], fs["fingerprint"],
        Path(workdir) / "filesystem.json",
    )  # fmt: skip
    return state | {"filesystem": made}


def mount(state: dict, fs: dict, workdir) -> dict:
    made = state["filesystem"]
    found = devices.ensure_mounted(state["devices"][0], Path(workdir) / "mnt", fs["type"], fs["mount"], made["uuid"])
    return state | {"mount": {"mountpoint": found.mountpoint, "options": found.options, "asked": fs["mount"]}}


def _target_path(state: dict, cell: dict, workdir) -> tuple[str, bool]:
    """Where a cell's data goes: the bare device for raw, else a file on the mounted filesystem."""
    if cell["target"] == "raw":
        return state["devices"][0], True
    name = f"fsbench-{cell['test']}-rep{cell['rep']}.dat"
    return str(Path(workdir) / "mnt" / name), False


def _check_state(state: dict, cell: dict, workdir) -> None:
    """Fail fast unless the device is in the state this cell needs: raw unmounted, or our filesystem mounted."""
    dev = state["devices"][0]
    devices.check_ours(dev, workdir)
    mnt = Path(workdir) / "mnt"
    current = devices.mount_at(mnt)
    if cell["target"] == "raw":
        if current:
            devices.unmount(mnt)
        return
    uuid = state["filesystem"]["uuid"]
    if current is None or current.source != dev or devices.probe(dev)["uuid"] != uuid:
        raise devices.DeviceError(
            f"{mnt} no longer holds filesystem '{cell['target']}' ({uuid}) from {dev}; "
            "another step changed the device in between"
        )


def _head_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def measure_write(state: dict, cell: dict, workdir) -> dict:
    """Write the cell's data (timing the flush too) and record how to recognise it again."""
    _check_state(state, cell, workdir)
    path, device = _target_path(state, cell, workdir)
    if not device:
        Path(path).unlink(missing_ok=True)
    try:
        result = engine.write(path, cell["size"], cell["block_size"], cell["data"], device=device)
    except OSError as e:
        if not device:
            Path(path).unlink(missing_ok=True)
        raise OSError(e.errno, f"writing {cell['size']} bytes to {path} failed: {e.strerror}") from None
    with open(path, "rb") as f:
        head = f.read(IDENTITY_BYTES)  # read back through the cache; dropped again before any read
    identity = result["file"] | {"path": path, "head_sha256": _head_digest(head)}
    return {
        "row": _row(cell, "write", result),
        "command": result["command"],
        "cell": cell,
        "identity": identity,
        "setup": state,
    }


def measure_read(write_record: dict, cell: dict, workdir) -> dict:
    """Read back exactly what the write made, from a cache emptied and then measured."""
    state, ident = write_record["setup"], write_record["identity"]
    _check_state(state, cell, workdir)
    path = ident["path"]
    _check_identity(path, ident, device=path == state["devices"][0])
    how = engine.drop_cache(path)
    result = engine.read(path, cell["size"], cell["block_size"])
    if cell["target"] != "raw":
        os.unlink(path)  # keep the filesystem's free space the same for the next cell
    return {
        "row": _row(cell, "read", result),
        "command": result["command"],
        "cache_method": how,
        "cell": cell,
        "identity": ident,
        "setup": state,
    }


def _check_identity(path: str, ident: dict, device: bool) -> None:
    """The file (or device) must be the one the write made: same inode and size, same first bytes."""
    problems = []
    if not os.path.exists(path):
        problems.append("it is gone")
    else:
        st = os.stat(path)
        if not device and (st.st_dev, st.st_ino, st.st_size) != (ident["st_dev"], ident["st_ino"], ident["size"]):
            problems.append("its inode or size changed")
        with open(path, "rb") as f:
            if _head_digest(f.read(IDENTITY_BYTES)) != ident["head_sha256"]:
                problems.append("its first bytes are not the ones written")
    if problems:
        raise devices.DeviceError(
            f"refusing to read {path}: it is not the file its write made ({'; '.join(problems)}); "
            "rerun so that the write is measured again"
        )
