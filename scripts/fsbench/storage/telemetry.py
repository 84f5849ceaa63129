"""What a measurement cost and what the devices did meanwhile: CPU seconds of the engine, bytes the array's
member devices moved (/sys/class/block/<dev>/stat), so a figure shows whether the device did the work.

A cache below the devices (a VM host's under a virtual disk, a RAID controller's) is invisible from here.
"""

import math
import os
import resource
from contextlib import contextmanager
from pathlib import Path

SECTOR = 512  # /sys/block/*/stat counts 512-byte sectors whatever the device's block size
# A read whose devices moved less than this share of what it read was (partly) served by a cache or shrunk by
# compression between the engine and the device.


def cpu_seconds() -> float:
    """User + system CPU of this process (all its threads: the python engine) and of its waited-for children
    (dd, fio)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def device_sectors(devices: list[str]) -> tuple[int, int] | None:
    """Sectors read and written so far by `devices` together, or None when one of them has no stat (a path
    array, or a device gone)."""
    read = written = 0
    for dev in devices:
        try:
            fields = (Path("/sys/class/block") / Path(os.path.realpath(dev)).name / "stat").read_text().split()
        except OSError:
            return None
        read, written = read + int(fields[2]), written + int(fields[6])
    return (read, written) if devices else None


@contextmanager
def measured(op: str, devices: list[str]):
    """Around an engine run: yields a dict that, after the run, holds its CPU seconds and device bytes."""
    found: dict = {}
    cpu, sectors = cpu_seconds(), device_sectors(devices)
    yield found
    after = device_sectors(devices)
    found["cpu_seconds"] = cpu_seconds() - cpu
    if sectors is None or after is None:
        found["device_bytes"] = math.nan
    else:
        found["device_bytes"] = (after[op == "write"] - sectors[op == "write"]) * SECTOR


def columns(op: str, nbytes: int, found: dict) -> dict:
    """cpu_s_per_gb, device_bytes and (writes) write_amplification of a measurement that moved `nbytes`."""
    device = found.get("device_bytes", math.nan)
    return {
        "cpu_s_per_gb": found["cpu_seconds"] / (nbytes / 1e9) if nbytes else math.nan,
        "device_bytes": device,
        "write_amplification": device / nbytes if op == "write" and nbytes and not math.isnan(device) else math.nan,
    }
