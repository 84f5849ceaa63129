"""Which machine a cell belongs to, and where on it a campaign keeps its loop images, mounts and data."""

import socket
from pathlib import Path

from fsbench.campaign.cells import ALL_HOSTS, LOCAL, all_hosts_segments, array_dir, is_all_hosts, measuring_hosts
from fsbench.storage.devices import DeviceError


def part_host(host: str) -> str:
    """The host segment of a host's own folder for its share of all-hosts cells (fsbench.measurement.all_hosts)."""
    return f"{ALL_HOSTS}-{host}"


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def workdirs_here(config: dict) -> list[Path]:
    """Every folder of the campaign that may hold something on this host: its arrays as measured from here,
    its share of all-hosts cells, and the file all hosts share (fsbench.measurement.all_hosts.shared_folder). Another
    node's folders are released on that node."""
    here = short_hostname()
    names = [h for h in measuring_hosts(config) if h in (LOCAL, here)] + [part_host(here), *all_hosts_segments(config)]
    return [array_dir(config["scratch"], config["campaign"], a, h) for h in names for a in config["arrays"]]


def check_host(host: str) -> None:
    """A cell for a named host must run there: on Slurm its jobs are pinned with --nodelist."""
    here = socket.gethostname()
    if host not in (LOCAL, here, short_hostname()) and not is_all_hosts(host):
        raise DeviceError(
            f"this cell is for host '{host}' but runs on '{here}': with hosts in the campaign, run it "
            "through Slurm (--profile profiles/slurm) so that each host's cells land on that node"
        )


def one_host_at_a_time(config: dict, array: str) -> bool:
    """Whether a host's steps on `array` must wait while another host measures: a `path` array is one
    filesystem all hosts share, and `hosts_parallel: false` says the hosts' own arrays share something too
    (one SAN). Loop, device and mdadm arrays are the host's own otherwise."""
    return not config["hosts_parallel"] or config["arrays"][array]["kind"] == "path"


def release_on(host: str, campaign_file, python: str) -> list[str]:
    """The command that releases a campaign on `host` through Slurm (`python -m fsbench release` there), for what a
    failed or cancelled job left on it. It waits at most 60 s for the node: a node Slurm cannot give is left to the
    next run, which finds, reuses and then releases what is there."""
    pin = [f"--nodelist={host}", "--nodes=1", "--ntasks=1", "--immediate=60", "--time=5", "--job-name=fsbench-release"]
    return ["srun", *pin, python, "-m", "fsbench", "release", str(campaign_file)]
