"""The storage under test as a step sees it: bring an array up (or check its directory) and describe it.

`attach` is idempotent: prepare_array calls it to make and record the array, and the steps after it call it
again to find the array as recorded, re-attaching the images a release took down between two runs.
Every check runs before anything is written: a real device must pass the guards, and an md array is
refused at once where the kernel has no md driver.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

from fsbench.storage import devices, guards
from fsbench.storage import layout as striping
from fsbench.storage.devices import Mount
from fsbench.storage.md import md_name, md_support, mdadm_create_argv
from fsbench.toolkit.records import Record, write_json
from fsbench.toolkit.system import output, run


@dataclass(frozen=True)
class ArrayState(Record):
    """An array as it is now: what filesystems and raw cells use (`devices`), and what it is made of."""

    kind: str  # loop | device | mdadm | path
    devices: tuple[str, ...]  # the md device when there is one, else the members
    members: tuple[str, ...]
    info: tuple[dict, ...] = field(default_factory=tuple)  # what the kernel says of each device (or the path)
    md: str | None = None
    path: str | None = None  # a path array: the directory fsbench writes in
    fs_type: str | None = None  # a path array: the type of the filesystem it lies on


@dataclass(frozen=True)
class Filesystem(Record):
    """What the mkfs step made, or found made for this round: its record's `filesystem`."""

    fs_type: str
    uuid: str
    fingerprint: str  # the settings it was made with, and the round (devices.ensure_filesystem)
    mkfs_argv: tuple[str, ...]
    mkfs_readback: dict  # what dumpe2fs, xfs_info or btrfs read back from the device
    devices: tuple[str, ...]


@dataclass(frozen=True)
class Target:
    """What a write, read or metadata step works on: the array, and the filesystem mounted on it (raw, path: none).

    Its record (a measurement's `setup`) is the array's, with `filesystem` and `mount` beside its keys."""

    array: ArrayState
    filesystem: Filesystem | None = None
    mount: Mount | None = None

    def as_record(self) -> dict:
        if self.filesystem is None:
            return self.array.as_record()
        return self.array.as_record() | {"filesystem": self.filesystem.as_record(), "mount": self.mount.as_record()}

    @classmethod
    def from_record(cls, record: dict) -> "Target":
        if "filesystem" not in record:
            return cls(ArrayState.from_record(record))
        fs, mount = Filesystem.from_record(record["filesystem"]), Mount.from_record(record["mount"])
        return cls(ArrayState.from_record(record), fs, mount)


def attach(array: dict, workdir, name: str = "") -> ArrayState:
    """Bring the array's devices up (loop images made and attached, md assembled) or check its directory."""
    kind, key = array["kind"], f"arrays.{name}"
    if kind == "path":
        return describe_path(array["path"], key)
    if kind == "loop":
        members = devices.attach_loop_images(Path(workdir) / "images", array["members"], array["size"])
    else:
        members = [array["device"]] if kind == "device" else array["devices"]
    state = ArrayState(kind, tuple(members), tuple(members))
    check_writable(state, workdir, key)
    if kind == "mdadm" or array.get("level") is not None:
        why = md_support()
        if why:
            raise devices.DeviceError(f"{key} (kind {kind}, RAID {array['level']}): {why}; nothing was written")
        md = assemble_md(members, array, workdir)
        state = ArrayState(kind, (md,), tuple(members), md=md)
    return ArrayState(state.kind, state.devices, state.members, tuple(device_info(d) for d in state.devices), state.md)


def check_writable(state: ArrayState, workdir, key: str = "array") -> None:
    """Refuse to write unless every member is ours: a loop image of this campaign, or a device passing the guards."""
    own = str((Path(workdir) / "mnt").resolve())  # our own mount of it is no objection
    if state.md:  # the members are held by our own md array now: that array must be free
        guards.check_device(state.md, [state.md], key, own_mount=own)
        return
    for dev in state.members:
        if not os.path.exists(dev):
            raise devices.DeviceError(f"{key}: {dev} is gone")
        if state.kind == "loop":
            devices.check_ours(dev, workdir)
        else:  # listed in allow_destroy: checked with the config
            guards.check_device(dev, list(state.members), key, own_mount=own)


def assemble_md(members: list[str], array: dict, workdir) -> str:
    """Create the md array over `members` (not reached on kernels without md: attach stops before)."""
    md = md_name(Path(workdir).parent.name, Path(workdir).name)
    if not os.path.exists(md):
        run(mdadm_create_argv(md, array["level"], array["chunk"], members))
    write_json(Path(workdir) / "md.json", {"md": md, "members": members})
    return md


def describe_path(path: str, key: str) -> ArrayState:
    """A directory on an existing filesystem: nothing to attach, make or mount; what it lies on, for the record."""
    if not os.path.isdir(path):
        raise devices.DeviceError(f"{key}.path: {path} is not an existing directory")
    fs_type = output(["findmnt", "-n", "-o", "FSTYPE", "-T", path])
    source = output(["findmnt", "-n", "-o", "SOURCE", "-T", path])
    return ArrayState(
        "path", (), (), ({"path": path, "fs_type": fs_type, "source": source},), path=path, fs_type=fs_type
    )


def data_folder(state: ArrayState, workdir, layout: dict | None = None, key: str = "array") -> ArrayState:
    """A path array's own subfolder, where its cells write (and what release removes), given the array's striping
    `layout` (arrays.<name>.layout) if it has one: its info then says the layout the filesystem read back."""
    data = Path(state.path) / f"fsbench-{Path(workdir).parent.name}-{Path(workdir).name}"
    data.mkdir(exist_ok=True)
    write_json(Path(workdir) / "path.json", {"data": str(data)})  # for release
    info = state.info
    if layout:
        info = ({**info[0], "layout": striping.apply(str(data), layout, state.fs_type, f"{key}.layout")},)
    return ArrayState(state.kind, state.devices, state.members, info, path=str(data), fs_type=state.fs_type)


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
