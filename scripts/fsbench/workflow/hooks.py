"""What the Snakefile's onstart, onsuccess and onerror do (they run on real runs only, never on a dry run)."""

import signal
from pathlib import Path

from fsbench.campaign.plan import forget_device_state
from fsbench.cluster.hosts import workdirs_here
from fsbench.storage.devices import lock_campaign, release
from fsbench.storage.guards import lock_device
from fsbench.workflow import cluster
from fsbench.workflow import snakemake_internals as internals

HELD_LOCKS = []


def hold_campaign_lock(campaign: dict) -> None:
    """One run per campaign at a time; the lock dies with this process, so kill -9 leaves none behind."""
    HELD_LOCKS.append(lock_campaign(Path(campaign["scratch"]) / campaign["campaign"]))
    for array in campaign["arrays"].values():  # and no two campaigns on one real device
        for dev in [array.get("device")] + array.get("devices", []):
            if dev:
                HELD_LOCKS.append(lock_device(dev, campaign["campaign"]))


def stop_on_sigterm() -> None:
    """SIGTERM stops the run as Ctrl-C does: running jobs are stopped (Slurm jobs cancelled), then onerror releases.
    Snakemake's own handler, set when its scheduler starts (before onstart), waits for every running job to finish:
    a whole group job through Slurm."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def release_all(campaign: dict, results: str) -> None:
    """Whatever happened, leave nothing of this campaign attached or mounted on this host; the state files of
    unfinished cells go too, so that the next run redoes them from mkfs (rules/filesystem.smk)."""
    for folder in workdirs_here(campaign):
        release(folder)
    forget_device_state(results)


def on_start(workflow, campaign: dict) -> None:
    stop_on_sigterm()
    cluster.check_cluster_hosts(internals.on_cluster(workflow), campaign)
    hold_campaign_lock(campaign)


def on_error(workflow, config: dict, campaign: dict, results: str) -> None:
    release_all(campaign, results)
    cluster.release_on_nodes(internals.on_cluster(workflow), config, campaign, Path(workflow.basedir, "scripts"))
