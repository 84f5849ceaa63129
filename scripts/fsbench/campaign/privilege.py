"""What a campaign needs root for, asked before anything runs: an ordinary user (on a cluster's login node, say)
gets a scratch folder of their own, and one line naming the key to change where a step of the campaign would need
root, instead of a failure after the first measurements."""

import os
import pwd
from pathlib import Path

# root's, as it always was: a finished campaign's cells keep their params (the scratch is in their workdir).
ROOT_SCRATCH = "/var/tmp/fsbench"
NEED_ROOT_KINDS = ("loop", "device", "mdadm")  # attached, made (mkfs) and mounted: root's work


def is_root() -> bool:
    return os.geteuid() == 0


def default_scratch() -> str:
    """root's /var/tmp/fsbench; anyone else's /var/tmp/fsbench-<user>: one folder for every user of a machine
    would belong to whoever ran first."""
    return ROOT_SCRATCH if is_root() else f"{ROOT_SCRATCH}-{user()}"


def user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:  # a uid without a passwd entry (a container's, say)
        return str(os.geteuid())


def unwritable(folder: str) -> str | None:
    """Why this user cannot make and write `folder` (it, or the nearest folder above it that exists), or None."""
    path = Path(folder)
    while not path.exists() and path != path.parent:
        path = path.parent
    if not path.is_dir():
        return f"{path} is not a directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable by {user()}"
    return None


def root_steps(config: dict) -> list[tuple[str, object, str]]:
    """Each setting of a validated campaign that makes a step need root, as (key, value, what to use instead)."""
    found = []
    for name, array in config["arrays"].items():
        if array["kind"] in NEED_ROOT_KINDS:
            allowed = "path (a directory of your own) without root: a loop, device or mdadm array is attached, made "
            found.append((f"arrays.{name}.kind", array["kind"], allowed + "(mkfs) and mounted, which needs root"))
    if config["io"]["cache"] == "drop" and config.get("io_cells", True):  # an io500 campaign without io: has none
        allowed = "fadvise or direct without root (drop writes /proc/sys/vm/drop_caches; both others are checked "
        found.append(("io.cache", "drop", allowed + "cold with mincore all the same)"))
    meta = config["metadata"]
    if meta is not None and meta.get("cache", "cold") == "cold":
        allowed = "warm without root (cold drops the kernel's caches of inodes and entries before stat and read)"
        found.append(("metadata.cache", "cold", allowed))
    # io500 drops caches before every phase where its own drop-caches says so (default false), by fsbench's own
    # drop unless its drop-caches-cmd is given (a command of the user's, e.g. through sudo)
    io500 = config["io500"]
    if io500 is not None and io500.get("drop-caches") and not io500.get("drop-caches-cmd"):
        allowed = "false without root, or a drop-caches-cmd you may run (fsbench's own drop writes "
        allowed += "/proc/sys/vm/drop_caches)"
        found.append(("io500.drop-caches", True, allowed))
    return found
