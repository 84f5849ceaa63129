# The cluster glue: what every device step asks the scheduler for (nodes, tasks, its node, the io_<host>,
# shared_io and storage_io limits), how steps are grouped into Slurm jobs, the refusal of a cluster run without
# hosts, and the release on every node after a failed run. profiles/slurm and docs/cluster.md say how it is used.
import asyncio
import os
import re
import subprocess
import sys
import time

import yaml
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake_interface_executor_plugins.utils import async_lock

from fsbench.campaign.cells import LOCAL, cell_hosts, is_all_hosts
from fsbench.cluster.hosts import one_host_at_a_time, release_on, short_hostname

# Snakemake's internals this file leans on, all of them here: nothing else in the workflow touches them. Written
# for the Snakemake below; tests/test_cluster_glue.py fails with a clear message on any other, so that an upgrade
# is checked (tests/test_slurm*.py) before it is trusted.
SNAKEMAKE_WRITTEN_FOR = "9.27.1"


def in_remote_job():
    """Whether this Snakemake is the one a group job started on a node (--mode remote)."""
    return workflow.exec_mode == ExecMode.REMOTE


def on_cluster():
    """Whether jobs go to a cluster executor (Slurm) rather than run here."""
    return workflow.non_local_exec


def set_group_components(value):
    """--group-components as if given on the command line (read when the first job asks for its group)."""
    workflow.group_settings.group_components = value


def group_asked_for(rule):
    """The group --groups gives `rule` (profiles/slurm), or None."""
    return workflow.group_settings.overwrite_groups.get(rule)


CANCEL_WAIT_S = 10  # how long a stopped run waits for its cancelled Slurm jobs to end


def stop_waiting_on_shutdown():
    """Snakemake's shutdown (after Ctrl-C or SIGTERM, or at the end of a run) joins the thread that polls Slurm,
    which may be asleep: before its first check (the plugin's init_seconds_before_status_checks, 40 s by default)
    or between two (backed off by 10 s after each quiet check, up to 180 s). A stopped run waited that long to exit.
    The poll is the same, its sleeps end as soon as shutdown asks. A cancel waits (a little) for the cancelled jobs
    to leave Slurm first, so that what they held on this host is free when onerror releases it.
    """

    async def nap(executor, seconds):
        end = time.monotonic() + seconds
        while executor.wait and (left := end - time.monotonic()) > 0:
            await asyncio.sleep(min(0.2, left))

    async def sleep(self):
        duration = self.next_seconds_between_status_checks
        if duration is None:
            duration = (
                self.workflow.remote_execution_settings.seconds_between_status_checks
            )
        await nap(self, duration)

    async def wait_for_jobs(self):
        """RemoteExecutor._wait_for_jobs, its first sleep a nap."""
        await nap(
            self,
            self.workflow.executor_plugin.common_settings.init_seconds_before_status_checks,
        )
        while True:
            async with async_lock(self.lock):
                if not self.wait:
                    return
                active_jobs = list(self.active_jobs)
                self.active_jobs.clear()
            still_active = [job async for job in self.check_active_jobs(active_jobs)]
            async with async_lock(self.lock):
                self.active_jobs.extend(still_active)
            await self.sleep()

    def cancel(self):
        """RemoteExecutor.cancel, then up to CANCEL_WAIT_S for the cancelled jobs to leave Slurm."""
        with self.lock:
            active_jobs = list(self.active_jobs)
        self.cancel_jobs(active_jobs)
        ids = ",".join(str(j.external_jobid) for j in active_jobs if j.external_jobid)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while ids and time.monotonic() < deadline:
            try:
                queued = subprocess.run(
                    ["squeue", "-h", "-o", "%i", "-j", ids],
                    capture_output=True,
                    timeout=5,
                )
            except (OSError, subprocess.TimeoutExpired):
                break
            if queued.returncode != 0 or not queued.stdout.strip():
                break
            time.sleep(0.2)
        self.shutdown()

    RemoteExecutor.sleep = sleep
    RemoteExecutor._wait_for_jobs = wait_for_jobs
    RemoteExecutor.cancel = cancel


# Unconditionally: the executor is chosen after the workflow is read, and only a cluster's executor polls.
stop_waiting_on_shutdown()


def declare_resource(name, default):
    """A resource limit of `default` unless given (--resources): also inside a group job, where Snakemake passes
    on no --resources."""
    if name not in workflow.global_resources:
        workflow.register_resource(name, default)


def pin_to_host(wildcards):
    """On Slurm: run on the cell's node (sbatch --nodelist), alone there when the campaign says exclusive."""
    nodes = (
        []
        if wildcards.host == LOCAL
        else (
            cell_hosts(CAMPAIGN, wildcards.host)
            if is_all_hosts(wildcards.host)
            else [wildcards.host]
        )
    )
    extra = [f"--nodelist={','.join(nodes)}"] if nodes else []
    return " ".join(extra + (["--exclusive"] if CAMPAIGN["exclusive"] else []))


def nodes_for(wildcards):
    """An all-hosts step runs one part on every host: Slurm must give it all of them (sbatch --nodes/--ntasks)."""
    return (
        len(cell_hosts(CAMPAIGN, wildcards.host)) if is_all_hosts(wildcards.host) else 1
    )


# What every device step asks the scheduler for besides storage_io. With hosts, each job is pinned to its
# node and an all-hosts step gets every host; without, constants: Snakemake inspects each function's
# signature for every job it plans.
if CAMPAIGN["hosts"]:
    DEVICE_RESOURCES = {
        "nodes": nodes_for,
        "tasks": nodes_for,
        "slurm_extra": pin_to_host,
    }
else:
    DEVICE_RESOURCES = {"slurm_extra": "--exclusive"} if CAMPAIGN["exclusive"] else {}


# On a cluster, profiles/slurm groups the device steps (--groups): each group is one Slurm job, and the Snakemake
# that job starts (--mode remote) is given the group's steps. Snakemake passes it neither --groups nor
# --group-components, so there the steps are grouped again, all in one group, or it would start one more
# Snakemake for each cell. Nowhere else: a local run ignores groups, and a dry run's checks of a group grow with
# the square of its steps. Snakemake sets its group settings after reading the workflow: they are read and set
# when the first job asks for its group.
IN_JOB = in_remote_job()


def all_in_one_group(wildcards):
    set_group_components({"fsbench-job": sys.maxsize})
    return "fsbench-job"


def release_group(wildcards):
    """The release joins its array's group where the profile groups steps per host and array; with adaptive
    repeats it is a job of its own: it waits for the decisions taken where Snakemake runs (decide,
    repeats_done), and a group job cannot wait for jobs that wait for it."""
    if PLAN.adaptive:
        # Nor may a later round's group job span cells: a decision that comes while it runs would merge the
        # next cell into it, and Snakemake then loses track of the job it submitted. One job per cell and round.
        set_group_components({})
        return None
    steps = group_asked_for("write")
    if steps is None:
        return None
    try:
        return steps.format(host=wildcards.host, array=wildcards.array)
    except (
        KeyError,
        IndexError,
    ):  # grouped per round or cell: the release is a job of its own
        return None


JOB_GROUP = all_in_one_group if IN_JOB else None
RELEASE_GROUP = all_in_one_group if IN_JOB else release_group


NOT_IN_NAME = re.compile(r"\W")


def host_io(host):
    """The resource that lets one job (or group job) at a time touch `host`'s storage."""
    return f"io_{NOT_IN_NAME.sub('_', host)}"


def on_host(host):
    return lambda wildcards: int(wildcards.host == host or is_all_hosts(wildcards.host))


# Who may touch storage at once. storage_io: one device step at a time within a job: scoped local, so that on a
# cluster each submitted job counts its own (a group job's steps one after another) and in a local run the run
# does. Between Slurm jobs, io_<host>: one job at a time per host (an all-hosts step takes every host's), and
# shared_io: one host at a time where the hosts share what they measure (a path array, or hosts_parallel: false).
# Hosts with their own loop, device or mdadm arrays measure at once.
SHARED = [a for a in CAMPAIGN["arrays"] if one_host_at_a_time(CAMPAIGN, a)]
DEVICE_RESOURCES |= {
    host_io(h): 1 if len(HOSTS) == 1 else on_host(h) for h in CAMPAIGN["hosts"]
}
DEVICE_RESOURCES["shared_io"] = (
    int(bool(SHARED))
    if len(SHARED) in (0, len(CAMPAIGN["arrays"]))
    else lambda wildcards: int(wildcards.array in SHARED)
)


# Each limit is 1 unless given (--resources).
for name in ["storage_io", "shared_io"] + [host_io(h) for h in CAMPAIGN["hosts"]]:
    declare_resource(name, 1)


resource_scopes:
    storage_io="local",


def check_cluster_hosts():
    """On a cluster a job may land on any node: without hosts, a loop image attached by one job would be
    measured, and left attached, on whatever node the next job gets. Refuse before anything is submitted.
    """
    on_nodes = [a for a, spec in CAMPAIGN["arrays"].items() if spec["kind"] != "path"]
    if on_cluster() and on_nodes and not CAMPAIGN["hosts"]:
        raise WorkflowError(
            f"fsbench: config key 'hosts': value [] is not allowed with a cluster executor for arrays "
            f"{', '.join(on_nodes)}; allowed: the node(s) whose storage to measure, e.g. hosts: [node042], "
            "so that every step of an array runs on that node"
        )


def release_on_nodes():
    """On a cluster, after a failed run: release the campaign on every other host too, each through Slurm, for
    what a failed or cancelled job left there (its release step never ran)."""
    if not (on_cluster() and CAMPAIGN["hosts"]):
        return
    campaign_file = Path(".snakemake", f"fsbench-{NAME}.yaml")
    campaign_file.parent.mkdir(exist_ok=True)
    campaign_file.write_text(yaml.safe_dump(dict(config)))
    scripts = {"PYTHONPATH": str(Path(workflow.basedir) / "scripts")}
    for host in CAMPAIGN["hosts"]:
        if host != short_hostname():
            argv = release_on(host, campaign_file, sys.executable)
            env = os.environ | scripts
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, env=env, timeout=300
                )
                said = (done.stdout + done.stderr).strip() or f"exit {done.returncode}"
            except (OSError, subprocess.TimeoutExpired) as e:
                said = str(e)
            print(f"fsbench: release on {host}: {said}", file=sys.stderr)
