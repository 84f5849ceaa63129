"""Every touch of Snakemake's internals, here and nowhere else (tests/test_workflow.py checks): no public API does
what these do. Written for the Snakemake below; tests/test_workflow.py fails with a clear message on any other, so
that an upgrade is checked (tests/test_slurm*.py, as root) before it is trusted.

The Slurm patches (install_slurm_patches) sit on Snakemake's RemoteExecutor, because the executor is chosen only
after the workflow is read and the poll they change starts with the executor, before onstart. Each patched method
asks the executor that runs it whether it is the Slurm plugin's and, if not, does what Snakemake's own does: a local
run never runs one (its executor is no RemoteExecutor), nor does any other cluster executor. An executor plugin of
our own wrapping the Slurm one would need a name of its own in every profile and a copy of the Slurm plugin's
settings, and would lean on the plugin registry's internals instead.
"""

import asyncio
import subprocess
import time

from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake_interface_executor_plugins.utils import async_lock

SNAKEMAKE_WRITTEN_FOR = "9.27.1"

SLURM_PLUGIN = "snakemake_executor_plugin_slurm"
CANCEL_WAIT_S = 10  # how long a stopped run waits for its cancelled Slurm jobs to end


def in_remote_job(workflow) -> bool:
    """Whether this Snakemake is the one a group job started on a node (--mode remote)."""
    return workflow.exec_mode == ExecMode.REMOTE


def on_cluster(workflow) -> bool:
    """Whether jobs go to a cluster executor (Slurm) rather than run here (known once the run starts: onstart)."""
    return workflow.non_local_exec


def set_group_components(workflow, value: dict) -> None:
    """--group-components as if given on the command line (read when the first job asks for its group)."""
    workflow.group_settings.group_components = value


def group_asked_for(workflow, rule: str):
    """The group --groups gives `rule` (profiles/slurm), or None."""
    return workflow.group_settings.overwrite_groups.get(rule)


def declare_resource(workflow, name: str, default: int) -> None:
    """A resource limit of `default` unless given (--resources): also inside a group job, where Snakemake passes
    on no --resources."""
    if name not in workflow.global_resources:
        workflow.register_resource(name, default)


def is_slurm(executor) -> bool:
    """Whether `executor` is the Slurm plugin's (or one made from it)."""
    return any(cls.__module__.split(".")[0] == SLURM_PLUGIN for cls in type(executor).__mro__)


async def nap(executor, seconds: float) -> None:
    """asyncio.sleep(seconds), cut short as soon as the executor's shutdown clears its `wait`."""
    end = time.monotonic() + seconds
    while executor.wait and (left := end - time.monotonic()) > 0:
        await asyncio.sleep(min(0.2, left))


async def sleep(self):
    """RemoteExecutor.sleep as a nap."""
    duration = self.next_seconds_between_status_checks
    if duration is None:
        duration = self.workflow.remote_execution_settings.seconds_between_status_checks
    await nap(self, duration)


async def wait_for_jobs(self):
    """RemoteExecutor._wait_for_jobs, its first sleep a nap."""
    await nap(self, self.workflow.executor_plugin.common_settings.init_seconds_before_status_checks)
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
            queued = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ids], capture_output=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            break
        if queued.returncode != 0 or not queued.stdout.strip():
            break
        time.sleep(0.2)
    self.shutdown()


PATCHES = {"sleep": sleep, "_wait_for_jobs": wait_for_jobs, "cancel": cancel}


def slurm_only(name: str, ours):
    """RemoteExecutor's method `name` that runs `ours` for the Slurm plugin's executor, Snakemake's own otherwise."""
    theirs = getattr(RemoteExecutor, name)

    def method(self, *args, **kwargs):
        return (ours if is_slurm(self) else theirs)(self, *args, **kwargs)

    method.__doc__, method.fsbench_original = ours.__doc__, theirs
    return method


def install_slurm_patches() -> None:
    """Snakemake's shutdown (after Ctrl-C or SIGTERM, or at the end of a run) joins the thread that polls Slurm,
    which may be asleep: before its first check (the plugin's init_seconds_before_status_checks, 40 s by default)
    or between two (backed off by 10 s after each quiet check, up to 180 s). A stopped run waited that long to exit.
    With these, the Slurm poll is the same but its sleeps end as soon as shutdown asks, and a cancel waits (a
    little) for the cancelled jobs to leave Slurm, so that what they held on this host is free when onerror
    releases it. Idempotent."""
    for name, ours in PATCHES.items():
        if not hasattr(getattr(RemoteExecutor, name), "fsbench_original"):
            setattr(RemoteExecutor, name, slurm_only(name, ours))
