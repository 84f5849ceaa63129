"""Where the figures came from: host, kernel, tools, and per array and filesystem how it was set up."""

import os
import platform
import socket
from pathlib import Path

from fsbench.storage.filesystems import FILESYSTEMS
from fsbench.toolkit.system import kernel_setting, version

TOOLS = {fs.version[0]: list(fs.version) for fs in FILESYSTEMS.values()} | {
    "fio": ["fio", "--version"],
    "dd": ["dd", "--version"],
    "losetup": ["losetup", "--version"],
    "mount": ["mount", "--version"],
}


def _os_release() -> str:
    try:
        fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
        return fields.get("PRETTY_NAME", "").strip('"')
    except OSError:
        return ""


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _mem_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


# The memory settings machine() notes (benchmarks/vm.py holds the second while it measures).
TRANSPARENT_HUGEPAGE = "/sys/kernel/mm/transparent_hugepage/enabled"
PAGE_REPORTING = "/sys/module/page_reporting/parameters/page_reporting_order"


def machine() -> dict:
    """The machine a measurement ran on, cheap enough to note in every record (no tool is run).

    Two memory settings that moved figures here: transparent huge pages (the python engine's buffers ask for
    them: with them a 1 MiB O_DIRECT call is one request, without them two) and free page reporting (a VM that
    hands freed memory back to its host makes a page anew at its next use: buffered reads after a cache drop
    swung 1.6-9.4 GB/s; docs/bench-peers.md). Where the kernel has no such setting, ""."""
    return {
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "distribution": _os_release(),
        "cpu": _cpu(),
        "cpus": os.cpu_count(),
        "memory_bytes": _mem_bytes(),
        "transparent_hugepage": kernel_setting(TRANSPARENT_HUGEPAGE),
        "page_reporting_order": kernel_setting(PAGE_REPORTING),
    }


def host() -> dict:
    import snakemake

    return machine() | {
        "python": platform.python_version(),
        "snakemake": snakemake.__version__,
        "tools": {name: version(argv) for name, argv in TOOLS.items()},
    }


def machines(records: list[dict]) -> dict:
    """Every machine the records were measured on, by host name (records older than this field have none)."""
    return {rec["machine"]["host"]: rec["machine"] for rec in records if "machine" in rec}


def setups(records: list[dict]) -> dict:
    """Per array: its devices; per filesystem on it: mkfs and mount options as asked and as read back."""
    arrays = {}
    for rec in records:
        cell, setup = rec["cell"], rec["setup"]
        where = cell["array"] if cell.get("host", "local") == "local" else f"{cell['host']}/{cell['array']}"
        entry = arrays.setdefault(where, {"spec": cell["array_spec"], "devices": setup["info"], "targets": {}})
        if cell["target"] in ("raw", "path") or cell["target"] in entry["targets"]:
            continue
        fs = setup["filesystem"]
        entry["targets"][cell["target"]] = {
            "fs_type": fs["fs_type"],
            "uuid": fs["uuid"],
            "mkfs_argv": fs["mkfs_argv"],
            "mkfs_readback": fs["mkfs_readback"],
            "mount_options_asked": setup["mount"]["asked"],
            "mount_options_read_back": setup["mount"]["options"],
        }
    return arrays
