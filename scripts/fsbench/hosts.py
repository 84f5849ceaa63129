"""Which machine a cell belongs to, and where on it a campaign keeps its loop images, mounts and data."""

import socket
from pathlib import Path

from fsbench.cells import ALL_HOSTS, LOCAL, hosts
from fsbench.storage.devices import DeviceError


def array_dir(scratch: str, campaign: str, array: str, host: str = LOCAL) -> Path:
    """Where an array's images and mount point live: <scratch>/<campaign>/<array>, and <array>.<host> when
    the campaign names hosts, so that a scratch directory (or a path array) shared by several nodes never
    mixes their loop images or data."""
    return Path(scratch) / campaign / (array if host == LOCAL else f"{array}.{host}")


def part_host(host: str) -> str:
    """The host segment of a host's own folder for its share of all-hosts cells (fsbench.all_hosts)."""
    return f"{ALL_HOSTS}-{host}"


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def workdirs_here(config: dict) -> list[Path]:
    """Every folder of the campaign that may hold something on this host: its arrays as measured from here,
    its share of all-hosts cells, and the file all hosts share (fsbench.all_hosts.shared_folder). Another
    node's folders are released on that node."""
    here = short_hostname()
    names = [h for h in hosts(config) if h in (LOCAL, here)] + [part_host(here), ALL_HOSTS]
    return [array_dir(config["scratch"], config["campaign"], a, h) for h in names for a in config["arrays"]]


def check_host(host: str) -> None:
    """A cell for a named host must run there: on Slurm its jobs are pinned with --nodelist."""
    here = socket.gethostname()
    if host not in (LOCAL, ALL_HOSTS, here, short_hostname()):
        raise DeviceError(
            f"this cell is for host '{host}' but runs on '{here}': with hosts in the campaign, run it "
            "through Slurm (--profile profiles/slurm) so that each host's cells land on that node"
        )
