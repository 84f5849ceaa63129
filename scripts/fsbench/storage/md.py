"""md (software RAID): whether this kernel can assemble arrays, and the mdadm command lines fsbench runs."""

import os
from pathlib import Path

from fsbench.toolkit.system import run


def md_support() -> str | None:
    """None when this kernel can assemble md arrays (loading md_mod if it must); otherwise why not."""
    if not Path("/proc/mdstat").exists():
        tried = run(["modprobe", "md_mod"], check=False)
        if not Path("/proc/mdstat").exists():
            said = (tried.stderr or tried.stdout).strip().splitlines()
            return (
                f"this kernel ({os.uname().release}) has no md (software RAID) driver: /proc/mdstat is missing "
                f"and `modprobe md_mod` failed ({said[-1] if said else f'exit {tried.returncode}'})"
            )
    return None


def mdadm_create_argv(md: str, level: int, chunk: int, members: list[str]) -> list[str]:
    argv = ["mdadm", "--create", md, "--run", "--metadata=1.2", f"--level={level}", f"--raid-devices={len(members)}"]
    if level not in (1,):  # RAID1 has no chunk
        argv.append(f"--chunk={chunk // 1024}K")
    return [*argv, "--assume-clean", *members]


def mdadm_stop_argv(md: str) -> list[str]:
    return ["mdadm", "--stop", md]


def md_name(campaign: str, array: str) -> str:
    return f"/dev/md/fsbench-{campaign}-{array}"
