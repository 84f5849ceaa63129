"""What every device step asks the scheduler for (nodes, tasks, its node, the io_<host>, shared_io and storage_io
limits), how steps are grouped into Slurm jobs, the refusal of a cluster run without hosts, and the release on every
node after a failed run. rules/*.smk call these; profiles/slurm and docs/cluster.md say how they are used."""

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError

from fsbench.campaign.cells import LOCAL, cell_hosts, is_all_hosts, measuring_hosts
from fsbench.cluster.hosts import one_host_at_a_time, release_on, short_hostname
from fsbench.workflow import snakemake_internals as internals

NOT_IN_NAME = re.compile(r"\W")
GROUP = "fsbench-job"  # the one group of the steps a group job runs


def host_io(host: str) -> str:
    """The resource that lets one job (or group job) at a time touch `host`'s storage."""
    return f"io_{NOT_IN_NAME.sub('_', host)}"


def limits(campaign: dict) -> list[str]:
    """The resources whose limit is 1 unless given (--resources)."""
    return ["storage_io", "shared_io"] + [host_io(h) for h in campaign["hosts"]]


def declare_limits(workflow, campaign: dict) -> None:
    for name in limits(campaign):
        internals.declare_resource(workflow, name, 1)


def device_resources(campaign: dict) -> dict:
    """What every device step asks the scheduler for besides storage_io. With hosts, each job is pinned to its node
    and an all-hosts step gets every host; without, constants: Snakemake inspects each function's signature for
    every job it plans.

    Who may touch storage at once, between Slurm jobs: io_<host>, one job at a time per host (an all-hosts step
    takes every host's), and shared_io, one host at a time where the hosts share what they measure (a path array,
    or hosts_parallel: false). Hosts with their own loop, device or mdadm arrays measure at once. (storage_io, one
    device step at a time within a job, is each rule's own.)"""
    named = campaign["hosts"]

    def nodes_for(wildcards):
        """An all-hosts step runs one part on each of its hosts (all, or a clients point's first N): Slurm must give
        it all of them (sbatch --nodes/--ntasks)."""
        return len(cell_hosts(campaign, wildcards.host)) if is_all_hosts(wildcards.host) else 1

    def pin_to_host(wildcards):
        """On Slurm: run on the cell's node(s) (sbatch --nodelist), alone there when the campaign says exclusive."""
        host = wildcards.host
        nodes = [] if host == LOCAL else cell_hosts(campaign, host) if is_all_hosts(host) else [host]
        extra = [f"--nodelist={','.join(nodes)}"] if nodes else []
        return " ".join(extra + (["--exclusive"] if campaign["exclusive"] else []))

    def on_host(host):
        return lambda wildcards: int(wildcards.host == host or is_all_hosts(wildcards.host))

    if named:
        found = {"nodes": nodes_for, "tasks": nodes_for, "slurm_extra": pin_to_host}
    else:
        found = {"slurm_extra": "--exclusive"} if campaign["exclusive"] else {}
    found |= {host_io(h): 1 if len(measuring_hosts(campaign)) == 1 else on_host(h) for h in named}
    shared = [a for a in campaign["arrays"] if one_host_at_a_time(campaign, a)]
    found["shared_io"] = (
        int(bool(shared))
        if len(shared) in (0, len(campaign["arrays"]))
        else lambda wildcards: int(wildcards.array in shared)
    )
    return found


# On a cluster, profiles/slurm groups the device steps (--groups): each group is one Slurm job, and the Snakemake
# that job starts (--mode remote) is given the group's steps. Snakemake passes it neither --groups nor
# --group-components, so there the steps are grouped again, all in one group, or it would start one more Snakemake
# for each cell. Nowhere else: a local run ignores groups, and a dry run's checks of a group grow with the square of
# its steps. Snakemake sets its group settings after reading the workflow: they are read and set when the first job
# asks for its group.
def job_group(workflow):
    """The `group:` of a device step: all in one inside a group job, none elsewhere."""
    if not internals.in_remote_job(workflow):
        return None

    def all_in_one(wildcards):
        internals.set_group_components(workflow, {GROUP: sys.maxsize})
        return GROUP

    return all_in_one


def array_group(workflow, adaptive: bool):
    """The `group:` of the steps the profile does not name, the release and io500's phases: each joins its array's
    group (the one the profile gives `write`) where the profile groups steps per host and array, so that a cell's
    io500 phases run in its array's group job rather than each as a Slurm job of its own (a job costs ~10-20 s to
    submit, poll and start Snakemake in: 14 phases x 6 points of a scaling study took over 20 min of it). With
    adaptive repeats each is a job of its own: the release waits for the decisions taken where Snakemake runs
    (decide, repeats_done), and a group job cannot wait for jobs that wait for it."""
    in_job = job_group(workflow)
    if in_job is not None:
        return in_job

    def group(wildcards):
        if adaptive:
            # Nor may a later round's group job span cells: a decision that comes while it runs would merge the
            # next cell into it, and Snakemake then loses track of the job it submitted. One job per cell and round.
            internals.set_group_components(workflow, {})
            return None
        steps = internals.group_asked_for(workflow, "write")
        if steps is None:
            return None
        try:
            return steps.format(host=wildcards.host, array=wildcards.array)
        except (KeyError, IndexError):  # grouped per round or cell: a job of its own
            return None

    return group


def check_cluster_hosts(on_cluster: bool, campaign: dict) -> None:
    """On a cluster a job may land on any node: without hosts, a loop image attached by one job would be measured,
    and left attached, on whatever node the next job gets. Refuse before anything is submitted."""
    on_nodes = [a for a, spec in campaign["arrays"].items() if spec["kind"] != "path"]
    if on_cluster and on_nodes and not campaign["hosts"]:
        raise WorkflowError(
            f"fsbench: config key 'hosts': value [] is not allowed with a cluster executor for arrays "
            f"{', '.join(on_nodes)}; allowed: the node(s) whose storage to measure, e.g. hosts: [node042], "
            "so that every step of an array runs on that node"
        )


def release_on_nodes(on_cluster: bool, config: dict, campaign: dict, scripts: Path) -> None:
    """On a cluster, after a failed run: release the campaign on every other host too, each through Slurm, for what
    a failed or cancelled job left there (its release step never ran). `config` is the workflow's, as given."""
    if not (on_cluster and campaign["hosts"]):
        return
    campaign_file = Path(".snakemake", f"fsbench-{campaign['campaign']}.yaml")
    campaign_file.parent.mkdir(exist_ok=True)
    campaign_file.write_text(yaml.safe_dump(dict(config)))
    env = os.environ | {"PYTHONPATH": str(scripts)}
    for host in campaign["hosts"]:
        if host != short_hostname():
            argv = release_on(host, campaign_file, sys.executable)
            try:
                done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
                said = (done.stdout + done.stderr).strip() or f"exit {done.returncode}"
            except (OSError, subprocess.TimeoutExpired) as e:
                said = str(e)
            print(f"fsbench: release on {host}: {said}", file=sys.stderr)
