"""Guards for real devices: nothing is written to a device unless every check here passes first.

A device must be listed in allow_destroy, exist as a block device, and be in use by nothing:
not mounted (itself or a partition), not the root filesystem, not active swap, not held by md
or device-mapper. Each refusal names the device, the reason, and what is on it.
"""

import os
import stat
from pathlib import Path

from fsbench.storage.devices import DeviceError, hold_lock, mounts, probe

LOCK_DIR = Path("/run/lock/fsbench")


def _sys(dev: str) -> Path:
    return Path("/sys/class/block") / Path(os.path.realpath(dev)).name


def _rdev(dev: str) -> str:
    st = os.stat(dev)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def family(dev: str) -> dict[str, str]:
    """The device and its partitions, as major:minor -> /dev name."""
    name = _sys(dev).name
    found = {_rdev(dev): f"/dev/{name}"}
    for part in _sys(dev).glob(f"{name}*/dev"):
        found[part.read_text().strip()] = f"/dev/{part.parent.name}"
    return found


def active_swaps(text: str | None = None) -> set[str]:
    """Devices in /proc/swaps (resolved), or in `text` shaped like it."""
    text = Path("/proc/swaps").read_text() if text is None else text
    return {os.path.realpath(line.split()[0]) for line in text.splitlines()[1:] if line.strip()}


def md_members(text: str) -> dict[str, str]:
    """Member device -> md array, from text shaped like /proc/mdstat."""
    members = {}
    for line in text.splitlines():
        if " : " not in line or not line.startswith("md"):
            continue
        array, rest = line.split(" : ", 1)
        for word in rest.split():
            if "[" in word:
                members[f"/dev/{word.split('[')[0]}"] = array.strip()
    return members


def holders(dev: str) -> list[str]:
    """What holds the device or one of its partitions open as a lower layer: md, device-mapper, bcache."""
    name = _sys(dev).name
    found = []
    for holder_dir in [_sys(dev) / "holders", *_sys(dev).glob(f"{name}*/holders")]:
        found += [h.name for h in holder_dir.iterdir()] if holder_dir.is_dir() else []
    return sorted(set(found))


def check_device(dev: str, allow_destroy: list[str], key: str, own_mount: str | None = None) -> dict:
    """Refuse unless `dev` may be overwritten; returns what it holds now (its signature).

    A mount at `own_mount` is the campaign's own filesystem on it, not someone else's use.
    """
    if not os.path.exists(dev):
        raise DeviceError(f"{key}: {dev} does not exist")
    if not stat.S_ISBLK(os.stat(dev).st_mode):
        raise DeviceError(f"{key}: {dev} is not a block device")
    real = os.path.realpath(dev)
    if real not in {os.path.realpath(d) for d in allow_destroy if os.path.exists(d)}:
        raise DeviceError(f"{key}: {dev} is not listed in allow_destroy; fsbench overwrites only devices listed there")
    sig = probe(dev)
    what = f" (it holds {sig['type']} {sig['uuid']})" if sig["type"] else ""
    fam = family(dev)
    for m in mounts():
        if m.device in fam and m.mountpoint != own_mount:
            root = " — the root filesystem" if m.mountpoint == "/" else ""
            raise DeviceError(f"{key}: {fam[m.device]} is mounted at {m.mountpoint}{root}{what}; refusing to touch it")
    swapping = active_swaps() & {os.path.realpath(d) for d in fam.values()}
    if swapping:
        raise DeviceError(f"{key}: {', '.join(sorted(swapping))} is active swap{what}; refusing to touch it")
    held = holders(dev)
    mdstat = Path("/proc/mdstat")
    in_md = md_members(mdstat.read_text()).get(real) if mdstat.exists() else None
    if held or in_md:
        by = ", ".join(held) or in_md
        raise DeviceError(f"{key}: {dev} is in use by {by} (an md array or device-mapper target){what}")
    return {"device": dev, "signature_before": sig}


def lock_device(dev: str, campaign: str) -> int:
    """Hold a lock on `dev` for this campaign while the returned descriptor stays open."""
    path = LOCK_DIR / f"{_rdev(dev).replace(':', '_')}.lock"
    fd = hold_lock(path, f"campaign '{campaign}', pid {os.getpid()}")
    if fd is None:
        raise DeviceError(f"{dev} is in use by another campaign: {path.read_text().strip()}")
    return fd
