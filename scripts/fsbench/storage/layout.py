"""A path array's striping layout (`arrays.<name>.layout`), applied to its data folder before anything is written.

On CephFS it is the folder's `ceph.dir.layout` (stripe_unit, stripe_count, object_size: the setfattr/getfattr
attributes, set here with the same system call), which every file made in the folder afterwards takes; on Lustre
`lfs setstripe -S stripe_unit -c stripe_count` (object_size is CephFS's own). What the filesystem reads back is what
the record keeps; a value it did not take stops the step before the first byte.
"""

import os
import shutil
from pathlib import Path

from fsbench.storage.devices import DeviceError
from fsbench.toolkit.system import output, run

KEYS = ("stripe_unit", "stripe_count", "object_size")
CEPH = ("ceph", "fuse.ceph-fuse", "fuse.ceph")  # the kernel client's type, and ceph-fuse's
LUSTRE = ("lustre",)
STRIPE_UNIT_ALIGN = 64 * 2**10  # CephFS and Lustre both take stripe units in multiples of 64 KiB


def problem(layout: dict, fs_type: str) -> str | None:
    """Why `layout` cannot be set on a filesystem of `fs_type` (None: it can), in the words of a config message."""
    if fs_type not in CEPH + LUSTRE:
        return f"a layout only where the path lies on CephFS or Lustre (this one is on {fs_type or 'nothing known'})"
    if fs_type in LUSTRE and "object_size" in layout:
        return "stripe_unit and stripe_count on Lustre (object_size is CephFS's)"
    if fs_type in LUSTRE and not shutil.which("lfs"):
        return "a layout on Lustre only where its `lfs` tool is installed"
    unit, size = layout.get("stripe_unit"), layout.get("object_size")
    if unit is not None and unit % STRIPE_UNIT_ALIGN:
        return f"a stripe_unit that is a multiple of 64KiB (got {unit} bytes)"
    if unit is not None and size is not None and size % unit:
        return f"an object_size that is a multiple of stripe_unit ({size} is not a multiple of {unit})"
    return None


def read(folder: str, fs_type: str) -> dict:
    """The layout `folder` gives new files, as the filesystem says: {stripe_unit, stripe_count, object_size, …}."""
    if fs_type in LUSTRE:
        said = output(["lfs", "getstripe", "-d", "-y", folder])
        found = dict(line.split(":", 1) for line in said.splitlines() if ":" in line)
        return {"stripe_unit": int(found["stripe_size"]), "stripe_count": int(found["stripe_count"])}
    # A folder with no layout of its own reads back none (ENODATA): its files take the parent's, up to the root's.
    for where in [Path(folder), *Path(folder).parents]:
        try:
            said = os.getxattr(where, "ceph.dir.layout").decode()
        except OSError:
            continue
        fields = dict(item.split("=", 1) for item in said.split())
        return {k: int(v) if v.isdigit() else v for k, v in fields.items()}
    raise DeviceError(f"{folder}: CephFS said no ceph.dir.layout for it or any folder above it")


def apply(folder: str, layout: dict, fs_type: str, key: str) -> dict:
    """Give `folder` the `layout` ({stripe_unit, stripe_count, object_size}, bytes and counts); returns what the
    filesystem reads back, after checking it took every value."""
    if why := problem(layout, fs_type):
        raise DeviceError(f"{key}: {folder}: allowed: {why}")
    if fs_type in LUSTRE:
        argv = ["lfs", "setstripe"]
        argv += ["-S", str(layout["stripe_unit"])] if "stripe_unit" in layout else []
        argv += ["-c", str(layout["stripe_count"])] if "stripe_count" in layout else []
        run([*argv, folder])
    else:  # all at once: one at a time, a new stripe_unit can be refused against the old object_size
        value = " ".join(f"{k}={layout[k]}" for k in KEYS if k in layout)
        try:
            os.setxattr(folder, "ceph.dir.layout", value.encode())
        except OSError as e:
            raise DeviceError(f"{key}: CephFS refused the layout {value!r} on {folder}: {e.strerror}") from None
    found = read(folder, fs_type)
    if wrong := {k: v for k, v in layout.items() if found.get(k) != v}:
        raise DeviceError(f"{key}: {folder} reads back {found}, not {wrong}")
    return found
