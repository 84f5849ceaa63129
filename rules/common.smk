import hashlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from snakemake_interface_executor_plugins.settings import ExecMode

sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))

from fsbench import cells as campaign_cells
from fsbench import config as campaign_config
from fsbench.engines import capabilities
from fsbench.cells import ALL_HOSTS, LOCAL
from fsbench.storage.devices import lock_campaign, release
from fsbench.storage.guards import lock_device
from fsbench.hosts import (
    array_dir,
    one_host_at_a_time,
    release_on,
    short_hostname,
    workdirs_here,
)
from fsbench.plan import WILDCARDS, Plan, forget_device_state
from fsbench.records import read_json

try:
    CAMPAIGN = campaign_config.validate(config)
except campaign_config.ConfigError as e:
    raise WorkflowError(f"fsbench: {e}") from None

NAME = CAMPAIGN["campaign"]
RESULTS = f"results/{NAME}"
PLAN = Plan(CAMPAIGN)
TARGETS = PLAN.targets
HOSTS = campaign_cells.hosts(CAMPAIGN)
MIN_REPS, MAX_REPS = PLAN.min_reps, PLAN.max_reps
# A cell of the campaign (Cell.path), all its repeats; its steps' records are in runs/{CELL}/rep{rep}/.
CELL = "{host}/{array}/{target}/{test}"


wildcard_constraints:
    **WILDCARDS,
    target="|".join(TARGETS),


def analysis_code():
    """A digest of the code that turns records into tables and plots. Unlike a measurement these cost seconds,
    so a new fsbench redoes them (a param: the profiles leave Snakemake's "code" trigger out, see README).
    """
    scripts = Path(workflow.basedir) / "scripts"
    files = sorted((scripts / "fsbench" / "analysis").glob("*.py"))
    files += [
        scripts / "fsbench" / "rows.py",
        scripts / "aggregate.py",
        scripts / "plot.py",
    ]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


ANALYSIS_CODE = analysis_code()


def record_file(step, rep="{rep}", cell=CELL):
    """A step's record: mkfs, mount, write or read of a cell and repeat."""
    return f"{RESULTS}/runs/{cell}/rep{rep}/{step}.json"


def state_file(step, rep="{rep}", cell=CELL):
    """The file that tells the step after `step` that the device is as `step` left it, in this run."""
    return f"{RESULTS}/state/{cell}/rep{rep}/{step}.ready"


def array_record(host="{host}", array="{array}"):
    return f"{RESULTS}/runs/{host}/{array}/array.json"


def step_log(step):
    return f"{RESULTS}/logs/{step}/{CELL}/rep{{rep}}.log"


def workdir(wildcards):
    return str(array_dir(CAMPAIGN["scratch"], NAME, wildcards.array, wildcards.host))


def cell_spec(wildcards):
    return PLAN.cell_spec(
        wildcards.host, wildcards.array, wildcards.target, wildcards.test, wildcards.rep
    )


def device_spec(wildcards):
    return PLAN.device_spec(
        wildcards.host, wildcards.array, wildcards.target, wildcards.test, wildcards.rep
    )


def cell_priority(wildcards):
    return PLAN.priority(
        wildcards.host, wildcards.array, wildcards.target, wildcards.test, wildcards.rep
    )


def precondition_record(host="{host}", array="{array}"):
    return f"{RESULTS}/runs/{host}/{array}/precondition.json"


def preconditioned(wildcards):
    """With config precondition, an array's first steps wait for its preconditioning (not a path array's)."""
    kind = CAMPAIGN["arrays"][wildcards.array]["kind"]
    if CAMPAIGN["precondition"] is None or kind == "path":
        return {}
    return {"precondition": precondition_record(wildcards.host, wildcards.array)}


def mkfs_input(wildcards):
    return {"array": array_record(wildcards.host, wildcards.array)} | preconditioned(
        wildcards
    )


def write_input(wildcards):
    """A filesystem is written once mounted; raw and path targets are written on the array itself."""
    if wildcards.target in ("raw", "path"):
        return {
            "setup": array_record(wildcards.host, wildcards.array)
        } | preconditioned(wildcards)
    return {"setup": record_file("mount"), "ready": state_file("mount")}


def pin_to_host(wildcards):
    """On Slurm: run on the cell's node (sbatch --nodelist), alone there when the campaign says exclusive."""
    nodes = {LOCAL: [], ALL_HOSTS: CAMPAIGN["hosts"]}.get(
        wildcards.host, [wildcards.host]
    )
    extra = [f"--nodelist={','.join(nodes)}"] if nodes else []
    return " ".join(extra + (["--exclusive"] if CAMPAIGN["exclusive"] else []))


def nodes_for(wildcards):
    """An all-hosts step runs one part on every host: Slurm must give it all of them (sbatch --nodes/--ntasks)."""
    return len(CAMPAIGN["hosts"]) if wildcards.host == ALL_HOSTS else 1


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
IN_JOB = workflow.exec_mode == ExecMode.REMOTE


def all_in_one_group(wildcards):
    workflow.group_settings.group_components = {"fsbench-job": sys.maxsize}
    return "fsbench-job"


def release_group(wildcards):
    """The release joins its array's group where the profile groups steps per host and array; with adaptive
    repeats it is a job of its own: it waits for the decisions taken where Snakemake runs (decide,
    repeats_done), and a group job cannot wait for jobs that wait for it."""
    if PLAN.adaptive:
        # Nor may a later round's group job span cells: a decision that comes while it runs would merge the
        # next cell into it, and Snakemake then loses track of the job it submitted. One job per cell and round.
        workflow.group_settings.group_components = {}
        return None
    steps = workflow.group_settings.overwrite_groups.get("write")
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
    return lambda wildcards: int(wildcards.host in (host, ALL_HOSTS))


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


# Each limit is 1 unless given (--resources): also inside a group job, where Snakemake passes on no --resources.
for name in ["storage_io", "shared_io"] + [host_io(h) for h in CAMPAIGN["hosts"]]:
    if name not in workflow.global_resources:
        workflow.register_resource(name, 1)


resource_scopes:
    storage_io="local",


def stream_threads(wildcards):
    return cell_spec(wildcards)["streams"]


# One thread per stream (on Slurm: --cpus-per-task); a constant where every cell has as many streams.
THREADS = (
    CAMPAIGN["io"]["streams"][0]
    if len(CAMPAIGN["io"]["streams"]) == 1
    else stream_threads
)


def cell_outputs(host=None, array=None):
    """What tells that a cell is finished: its records (fixed repeats), or the file naming the repeats
    an adaptive cell took (rules/measure.smk)."""
    found = []
    for c in campaign_cells.cells(CAMPAIGN):
        if host in (None, c.host) and array in (None, c.array):
            # A metadata cell's repeats: a fixed count, or an adaptive campaign's min.
            if isinstance(c, campaign_cells.MetaCell):
                found.append(record_file("metadata", c.rep, c.path))
            elif not PLAN.adaptive:
                found += [record_file(op, c.rep, c.path) for op in ("write", "read")]
            elif c.rep == 1:
                found.append(f"{RESULTS}/repeats/{c.path}/done.json")
    return found


def array_outputs(wildcards):
    return cell_outputs(wildcards.host, wildcards.array)


def plot_files(as_report_items=False):
    """The plots as files. For rule plots, the PNGs as report items with a caption saying what was measured
    and how (only there: an item is credited to the rule whose output it is).

    baselines.png/svg (the campaign beside its baselines) only when the config has baselines.
    """
    compared = "raw" in TARGETS and any(
        t != "raw" for t in TARGETS
    )  # a filesystem beside raw
    names = ["throughput", "durable"] + (["efficiency"] if compared else [])
    # An engine without per-call times (dd) gets no latency plots (its IOPS come from dd's records).
    timed = capabilities.why_not(CAMPAIGN["io"]["engine"], capabilities.LATENCY) is None
    names += ["iops"] + (["latency", "latency_percentiles"] if timed else [])
    # Nor a time series (timeseries.csv has no rows for it).
    series = capabilities.why_not(CAMPAIGN["io"]["engine"], capabilities.TIMESERIES)
    names += ["timeseries"] if series is None else []
    names += ["metadata"] if CAMPAIGN["metadata"] else []
    names += ["baselines"] if CAMPAIGN["baselines"] else []
    files = []
    for name in names:
        png = f"{RESULTS}/plots/{name}.png"
        caption = f"{workflow.basedir}/report/{name}.rst"  # called from the Snakefile, not from here
        item = png
        if as_report_items:
            item = report(png, caption=caption, category="Plots")
        files += [item, f"{RESULTS}/plots/{name}.svg"]
    return files


def earlier_files():
    """compare_to's measurements.csv, and its provenance.json where there is one: a change to either reruns compare."""
    earlier = CAMPAIGN["compare_to"]
    if earlier is None:
        return []
    csv = (
        Path(earlier) / "measurements.csv" if Path(earlier).is_dir() else Path(earlier)
    )
    prov = csv.parent / "provenance.json"
    return [str(csv)] + ([str(prov)] if prov.exists() else [])


def final_outputs():
    return [
        f"{RESULTS}/measurements.csv",
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/summary.md",
        f"{RESULTS}/provenance.json",
        *plot_files(),
        *([f"{RESULTS}/baselines.csv"] if CAMPAIGN["baselines"] else []),
        *([f"{RESULTS}/compare.md"] if CAMPAIGN["compare_to"] else []),
        *([f"{RESULTS}/history.json"] if CAMPAIGN["history"] is not False else []),
    ]


HELD_LOCKS = []


def hold_campaign_lock():
    """One run per campaign at a time; the lock dies with this process, so kill -9 leaves none behind."""
    HELD_LOCKS.append(lock_campaign(Path(CAMPAIGN["scratch"]) / NAME))
    for array in CAMPAIGN["arrays"].values():  # and no two campaigns on one real device
        for dev in [array.get("device")] + array.get("devices", []):
            if dev:
                HELD_LOCKS.append(lock_device(dev, NAME))


def stop_on_sigterm():
    """SIGTERM stops the run as Ctrl-C does: running jobs are stopped (Slurm jobs cancelled), then onerror
    releases. Snakemake's own handler, set when its scheduler starts (before onstart), waits for every running job
    to finish: a whole group job through Slurm."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)


def check_cluster_hosts():
    """On a cluster a job may land on any node: without hosts, a loop image attached by one job would be
    measured, and left attached, on whatever node the next job gets. Refuse before anything is submitted.
    """
    on_nodes = [a for a, spec in CAMPAIGN["arrays"].items() if spec["kind"] != "path"]
    if workflow.non_local_exec and on_nodes and not CAMPAIGN["hosts"]:
        raise WorkflowError(
            f"fsbench: config key 'hosts': value [] is not allowed with a cluster executor for arrays "
            f"{', '.join(on_nodes)}; allowed: the node(s) whose storage to measure, e.g. hosts: [node042], "
            "so that every step of an array runs on that node"
        )


def release_all():
    """Whatever happened, leave nothing of this campaign attached or mounted on this host; the state files
    of unfinished cells go too, so that the next run redoes them from mkfs (rules/filesystem.smk).
    """
    for folder in workdirs_here(CAMPAIGN):
        release(folder)
    forget_device_state(RESULTS)


def release_on_nodes():
    """On a cluster, after a failed run: release the campaign on every other host too, each through Slurm, for
    what a failed or cancelled job left there (its release step never ran)."""
    if not (workflow.non_local_exec and CAMPAIGN["hosts"]):
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


def records_upto(cell, k):
    return [
        record_file(op, r, cell) for r in range(1, k + 1) for op in ("write", "read")
    ]


def reps_reached(cell, k):
    """How many repeats an adaptive cell has by round k: it stops at its first decision that says no more."""
    n = MIN_REPS
    while n < k and read_json(checkpoints.decide.get(**cell, k=n).output[0])["more"]:
        n += 1
    return n


def decision_records(wildcards):
    """The records a decision after rep k weighs: reps 1..k of the cell (own); with io.repeats decide, also
    those of every cell it is compared with, as far as each got by then (others)."""
    cell = {name: wildcards[name] for name in ("host", "array", "target", "test")}
    k = int(wildcards.k)
    others = []
    if PLAN.repeats["decide"]:
        for target, test in PLAN.partners(**cell):
            partner = cell | {"target": target, "test": test}
            others += records_upto(CELL.format(**partner), reps_reached(partner, k))
    return {"own": records_upto(CELL.format(**cell), k), "others": others}


def adaptive_records(wildcards):
    """Follow a cell's decisions from rep MIN_REPS on: its last decision, and the records of every rep it took."""
    cell = dict(wildcards.items())
    k = MIN_REPS
    while True:
        decision = checkpoints.decide.get(**cell, k=k).output[0]
        if not read_json(decision)["more"]:
            return [decision] + records_upto(CELL.format(**cell), k)
        k += 1
