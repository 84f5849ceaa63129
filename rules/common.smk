import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))

from fsbench import config as campaign_config
from fsbench.devices import lock_campaign, release
from fsbench.guards import lock_device
from fsbench.sizes import format_size, parse_size
from fsbench.steps import array_dir

try:
    CAMPAIGN = campaign_config.validate(config)
except campaign_config.ConfigError as e:
    raise WorkflowError(f"fsbench: {e}") from None

NAME = CAMPAIGN["campaign"]
RESULTS = f"results/{NAME}"
TARGETS = campaign_config.all_targets(CAMPAIGN)
CELL = "{array}/{target}/{pattern}-{bs}-{io}-{streams}s/rep{rep}"


wildcard_constraints:
    array="[A-Za-z0-9][A-Za-z0-9_-]*",
    pattern="seq|rand",
    bs=r"\d+(B|KiB|MiB|GiB|TiB|PiB)",
    io="buffered|direct",
    streams=r"\d+",
    rep=r"\d+",


def rule_name(stage, target):
    return f"{stage}_{target.replace('-', '_')}"


def priority(target, stage):
    """All of one target's jobs outrank the next target's, so filesystems never overlap on a device;
    within a target, later stages first, so each cell's write is read before the next cell starts.
    """
    return (len(TARGETS) - TARGETS.index(target)) * 10 + stage


def state_file(target, name):
    return f"{RESULTS}/state/{CELL.replace('{target}', target)}/{name}"


def ready_file(target):
    """What a write waits for: the filesystem mounted, or for raw and path arrays the array attached."""
    return state_file(
        target, "mounted.json" if target in CAMPAIGN["filesystems"] else "attached.json"
    )


def record_file(target, op):
    return f"{RESULTS}/runs/{CELL.replace('{target}', target)}/{op}.json"


def log_file(stage, target):
    return f"{RESULTS}/logs/{stage}/{CELL.replace('{target}', target)}.log"


def workdir(wildcards):
    return str(array_dir(CAMPAIGN["scratch"], NAME, wildcards.array))


def array_spec(wildcards):
    return CAMPAIGN["arrays"][wildcards.array]


def fs_spec(target):
    """A filesystem's settings; the fingerprint changes when anything that shapes it changes."""

    def spec(wildcards):
        fs = CAMPAIGN["filesystems"][target]
        array = CAMPAIGN["arrays"][wildcards.array]
        return fs | {
            "name": target,
            "fingerprint": campaign_config.fingerprint(fs, array),
        }

    return spec


def cell_spec(target):
    """Everything that decides one measurement: a change to any of it re-measures the cell."""

    def spec(wildcards):
        io = CAMPAIGN["io"]
        fs = CAMPAIGN["filesystems"].get(target)
        return {
            "campaign": NAME,
            "array": wildcards.array,
            "target": target,
            "fs_type": fs["type"] if fs else target,
            "pattern": wildcards.pattern,
            "block_size": parse_size(wildcards.bs),
            "direct": wildcards.io == "direct",
            "streams": int(wildcards.streams),
            "rep": int(wildcards.rep),
            "test": f"{wildcards.pattern}-{wildcards.bs}-{wildcards.io}-{wildcards.streams}s",
            "size": io["size"],
            "data": io["data"],
            "engine": io["engine"],
            "cache": io["cache"],
            "array_spec": array_spec(wildcards),
            "fs": fs_spec(target)(wildcards) if fs else None,
        }

    return spec


def cell_files(op, array=None):
    return [
        f"{RESULTS}/runs/{c.array}/{c.target}/{c.test}/rep{c.rep}/{op}.json"
        for c in campaign_config.cells(CAMPAIGN)
        if array in (None, c.array)
    ]


def array_reads(wildcards):
    return cell_files("read", wildcards.array)


def plot_files():
    """The plots as files; the PNGs also as report items with a caption saying what was measured and how.

    baselines.png/svg (the campaign beside its baselines) only when the config has baselines.
    """
    names = ["throughput", "durable"] + (["efficiency"] if "raw" in TARGETS else [])
    names += ["baselines"] if CAMPAIGN["baselines"] else []
    files = []
    for name in names:
        png = f"{RESULTS}/plots/{name}.png"
        caption = f"{workflow.basedir}/report/{name}.rst"  # called from the Snakefile, not from here
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


def release_all():
    """Whatever happened, leave nothing of this campaign attached or mounted on this host."""
    for array in CAMPAIGN["arrays"]:
        release(array_dir(CAMPAIGN["scratch"], NAME, array))
