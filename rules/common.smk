import hashlib
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "scripts"))

from fsbench.campaign import cells as campaign_cells
from fsbench.campaign import config as campaign_config
from fsbench.campaign.cells import array_dir
from fsbench.campaign.plan import WILDCARDS, Plan, forget_device_state
from fsbench.cluster.hosts import workdirs_here
from fsbench.engines import table
from fsbench.storage.devices import lock_campaign, release
from fsbench.storage.guards import lock_device
from fsbench.io500.phases import PHASES as IO500_PHASES
from fsbench.toolkit.records import read_json

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
# Where IO500's phases run (config io500), as (host, array, target); and their processes per host.
IO500_PLACES = campaign_cells.io500_places(CAMPAIGN)
IO500_THREADS = (CAMPAIGN["io500"] or {}).get("processes", 1)


wildcard_constraints:
    **WILDCARDS,
    target="|".join(TARGETS),


# The code that turns records into tables, plots and documents, wherever it lives (tests/test_rerun.py).
ANALYSIS_PACKAGES = ["analysis", "plots", "report"]
ANALYSIS_MODULES = ["measurement/rows.py"]


def analysis_code():
    """A digest of the code that turns records into tables and plots. Unlike a measurement these cost seconds,
    so a new fsbench redoes them (a param: the profiles leave Snakemake's "code" trigger out, see docs/guide.md).
    """
    scripts = Path(workflow.basedir) / "scripts"
    package = scripts / "fsbench"
    files = [
        f for part in ANALYSIS_PACKAGES for f in sorted((package / part).glob("*.py"))
    ]
    files += [package / f for f in ANALYSIS_MODULES]
    files += [scripts / "aggregate.py", scripts / "plot.py", scripts / "scaling.py"]
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


def part_hosts(wildcards):
    """The hosts of a cell's parts: a clients point's first ones, else every host of the campaign."""
    return campaign_cells.cell_hosts(CAMPAIGN, wildcards.host)


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


def io500_outputs(host=None, array=None):
    """What tells that an IO500 cell is finished: its last phase's record."""
    return [
        record_file(IO500_PHASES[-1], 1, f"{h}/{a}/{t}/io500")
        for h, a, t in IO500_PLACES
        if host in (None, h) and array in (None, a)
    ]


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
    timed = table.why_not(CAMPAIGN["io"]["engine"], table.LATENCY) is None
    names += ["iops"] + (["latency", "latency_percentiles"] if timed else [])
    # Nor a time series (timeseries.csv has no rows for it).
    series = table.why_not(CAMPAIGN["io"]["engine"], table.TIMESERIES)
    names += ["timeseries"] if series is None else []
    names += ["metadata"] if CAMPAIGN["metadata"] else []
    names += ["baselines"] if CAMPAIGN["baselines"] else []
    files = []
    for name in names:
        png = f"{RESULTS}/plots/{name}.png"
        caption = f"{workflow.basedir}/captions/{name}.rst"  # called from the Snakefile, not from here
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
        *([f"{RESULTS}/io500.csv"] if IO500_PLACES else []),
        *([f"{RESULTS}/scaling.csv", f"{RESULTS}/plots/scaling.png"] if CAMPAIGN["clients"] else []),
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


def release_all():
    """Whatever happened, leave nothing of this campaign attached or mounted on this host; the state files
    of unfinished cells go too, so that the next run redoes them from mkfs (rules/filesystem.smk).
    """
    for folder in workdirs_here(CAMPAIGN):
        release(folder)
    forget_device_state(RESULTS)


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


# IO500 (rules/io500.smk): a cell of IO500 phases, its records and state files, its settings and inputs.
IO500_CELL = "{host}/{array}/{target}/io500"


def io500_record(phase, cell=IO500_CELL):
    return record_file(phase, 1, cell)


def io500_state(phase, cell=IO500_CELL):
    return state_file(phase, 1, cell)


def io500_records():
    """Every IO500 phase record of the campaign: io500.csv's, and the history's rows of the phases."""
    return [
        io500_record(phase, IO500_CELL.format(host=h, array=a, target=t))
        for h, a, t in IO500_PLACES
        for phase in IO500_PHASES
    ]


def io500_cell(wildcards):
    return PLAN.cell_spec(wildcards.host, wildcards.array, wildcards.target, "io500", 1)


def io500_priority(wildcards):
    return PLAN.priority(wildcards.host, wildcards.array, wildcards.target, "io500", 1)


def io500_input(phase):
    """The phase before (its record and state), or for the first the target's setup: mount, or the array."""
    i = IO500_PHASES.index(phase)

    def found(wildcards):
        cell = IO500_CELL.format(**wildcards)
        if i > 0:
            before = IO500_PHASES[i - 1]
            return {
                "before": io500_record(before, cell),
                "ready": io500_state(before, cell),
            }
        if wildcards.target == "path":
            return {"before": array_record(wildcards.host, wildcards.array)}
        return {
            "before": record_file("mount", 1, cell),
            "ready": state_file("mount", 1, cell),
        }

    return found
