"""What a tool here needs from Debian's packages, installed with apt-get when missing (root only)."""

import os
import shutil
import subprocess


class Unavailable(RuntimeError):
    """What is asked cannot be installed or started here."""


def which(tool: str) -> str | None:
    """`tool`'s path, looking in the sbin folders too (root's tools are there, and PATH often lacks them)."""
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")


def install(packages: dict, what: str) -> None:
    """Install the packages ({tool: package}) whose tool is missing; Unavailable names `what` needed them."""
    missing = sorted({pkg for tool, pkg in packages.items() if not which(tool)})
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(f"{what} needs {', '.join(missing)}, and installing them needs root and apt-get")
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise Unavailable(f"{' '.join(argv)} failed: {proc.stderr.strip()[-500:]}")
