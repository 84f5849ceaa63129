import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))

from fsbench import config as campaign_config
from fsbench.devices import lock_campaign, release
from fsbench.guards import lock_device
from fsbench.records import read_json
from fsbench.sizes import parse_size
from fsbench.config import ALL_HOSTS, LOCAL
from fsbench.steps import array_dir, workdirs_here

try:
    CAMPAIGN = campaign_config.validate(config)
except campaign_config.ConfigError as e:
    raise WorkflowError(f"fsbench: {e}") from None

NAME = CAMPAIGN["campaign"]
RESULTS = f"results/{NAME}"
TARGETS = campaign_config.all_targets(CAMPAIGN)
HOSTS = campaign_config.hosts(CAMPAIGN)
MIN_REPS, MAX_REPS, TARGET_CI = campaign_config.repeat_plan(CAMPAIGN["io"])
TEST = "{pattern}-{bs}-{io}-{streams}s"
# A cell of the campaign, all its repeats.
CELL = f"{{host}}/{{array}}/{{target}}/{TEST}"


HOST = "[A-Za-z0-9][A-Za-z0-9.-]*"


wildcard_constraints:
    host=HOST,
    array="[A-Za-z0-9][A-Za-z0-9_-]*",
    target="|".join(TARGETS),
    pattern="seq|rand",
    bs=r"\d+(B|KiB|MiB|GiB|TiB|PiB)",
    io="buffered|direct",
    streams=r"\d+",
    rep=r"\d+",
    k=r"\d+",


def measure_priority(wildcards):
    """Repeats in rounds: every cell's rep 1, then every cell's rep 2, ..., so that drift over time
    spreads over all cells instead of looking like a difference between them. Within a round the
    targets in config order; the scheduler's storage_io=1 keeps them from overlapping on a device.
    """
    round_ = MAX_REPS - int(wildcards.rep)
    return (
        round_ * 10 * (len(TARGETS) + 1)
        + (len(TARGETS) - TARGETS.index(wildcards.target)) * 10
    )


def record_file(op, rep="{rep}", cell=CELL):
    return f"{RESULTS}/runs/{cell}/rep{rep}/{op}.json"


def workdir(wildcards):
    return str(array_dir(CAMPAIGN["scratch"], NAME, wildcards.array, wildcards.host))


def array_spec(wildcards):
    return CAMPAIGN["arrays"][wildcards.array]


def pin_to_host(wildcards):
    """On Slurm: run on the cell's node (sbatch --nodelist), alone there when the campaign says exclusive."""
    nodes = {LOCAL: [], ALL_HOSTS: CAMPAIGN["hosts"]}.get(
        wildcards.host, [wildcards.host]
    )
    extra = [f"--nodelist={','.join(nodes)}"] if nodes else []
    return " ".join(extra + (["--exclusive"] if CAMPAIGN["exclusive"] else []))


def cell_spec(wildcards):
    """Everything that decides one measurement: a change to any of it re-measures the cell."""
    io = CAMPAIGN["io"]
    array = array_spec(wildcards)
    target = wildcards.target
    fs = CAMPAIGN["filesystems"].get(target)
    return {
        "campaign": NAME,
        "host": wildcards.host,
        "array": wildcards.array,
        "target": target,
        "fs_type": fs["type"] if fs else target,
        "pattern": wildcards.pattern,
        "block_size": parse_size(wildcards.bs),
        "direct": wildcards.io == "direct",
        "streams": int(wildcards.streams),
        "rep": int(wildcards.rep),
        "test": TEST.format(**wildcards),
        "size": io["size"],
        "data": io["data"],
        "engine": io["engine"],
        "cache": io["cache"],
        "array_spec": array,
        # The fingerprint changes when anything that shapes the filesystem changes.
        "fs": (
            fs | {"name": target, "fingerprint": campaign_config.fingerprint(fs, array)}
            if fs
            else None
        ),
    }


def cell_path(c):
    return f"{c.host}/{c.array}/{c.target}/{c.test}"


def cell_outputs(host=None, array=None):
    """What tells that a cell is finished: its records (fixed repeats), or the file naming the repeats
    an adaptive cell took (rules/measure.smk)."""
    found = []
    for c in campaign_config.cells(CAMPAIGN):
        if host in (None, c.host) and array in (None, c.array):
            if TARGET_CI is None:
                found += [
                    record_file(op, c.rep, cell_path(c)) for op in ("write", "read")
                ]
            elif c.rep == 1:
                found.append(f"{RESULTS}/repeats/{cell_path(c)}/done.json")
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


def final_outputs():
    return [
        f"{RESULTS}/measurements.csv",
        f"{RESULTS}/summary.csv",
        f"{RESULTS}/summary.md",
        f"{RESULTS}/provenance.json",
        *plot_files(),
        *([f"{RESULTS}/baselines.csv"] if CAMPAIGN["baselines"] else []),
    ]


HELD_LOCKS = []


def hold_campaign_lock():
    """One run per campaign at a time; the lock dies with this process, so kill -9 leaves none behind."""
    HELD_LOCKS.append(lock_campaign(Path(CAMPAIGN["scratch"]) / NAME))
    for array in CAMPAIGN["arrays"].values():  # and no two campaigns on one real device
        for dev in [array.get("device")] + array.get("devices", []):
            if dev:
                HELD_LOCKS.append(lock_device(dev, NAME))


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
    """Whatever happened, leave nothing of this campaign attached or mounted on this host."""
    for folder in workdirs_here(CAMPAIGN):
        release(folder)


def records_upto(cell, k):
    return [
        record_file(op, r, cell) for r in range(1, k + 1) for op in ("write", "read")
    ]


def decision_records(wildcards):
    """The records a decision after rep k weighs: reps 1..k of the cell."""
    return records_upto(CELL.format(**dict(wildcards.items())), int(wildcards.k))


def adaptive_records(wildcards):
    """Follow a cell's decisions from rep MIN_REPS on: its last decision, and the records of every rep it took."""
    cell = dict(wildcards.items())
    k = MIN_REPS
    while True:
        decision = checkpoints.decide.get(**cell, k=k).output[0]
        if not read_json(decision)["more"]:
            return [decision] + records_upto(CELL.format(**cell), k)
        k += 1
