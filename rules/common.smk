import sys
from pathlib import Path

SCRIPTS = str(Path(workflow.basedir) / "scripts")
sys.path.insert(0, SCRIPTS)

from fsbench.campaign import cells as campaign_cells
from fsbench.campaign import config as campaign_config
from fsbench.campaign.cells import array_dir
from fsbench.campaign.plan import WILDCARDS, Plan
from fsbench.io500.phases import order as io500_order
from fsbench.plots.table import campaign_plots
from fsbench.toolkit.records import read_json
from fsbench.workflow.checkout import scripts_first
from fsbench.workflow.digest import analysis_digest
from fsbench.workflow.snakemake_internals import in_remote_job

scripts_first(SCRIPTS)  # the step scripts too import this checkout's fsbench

try:
    CAMPAIGN = campaign_config.validate(config)
except campaign_config.ConfigError as e:
    raise WorkflowError(f"fsbench: {e}") from None

NAME = CAMPAIGN["campaign"]
RESULTS = f"results/{NAME}"
PLAN = Plan(CAMPAIGN, RESULTS)
TARGETS = PLAN.targets
# Said before any job (a dry run too; not again in a cluster job's Snakemake): finished cells whose records hold an
# older method than the code's, and whether they keep their figures (methods: recorded) or are measured again.
if not in_remote_job(workflow) and (older := PLAN.older()):
    print(older, file=sys.stderr)
MEASURING_HOSTS = campaign_cells.measuring_hosts(CAMPAIGN)
MIN_REPS, MAX_REPS = PLAN.min_reps, PLAN.max_reps
# A cell of the campaign (Cell.path), all its repeats; its steps' records are in runs/{CELL}/rep{rep}/.
CELL = "{host}/{array}/{target}/{test}"
# Where IO500's phases run (config io500), as (host, array, target); and their processes per host.
IO500_PLACES = campaign_cells.io500_places(CAMPAIGN)
IO500_THREADS = (CAMPAIGN["io500"] or {}).get("processes", 1)
# IO500's phases in io500's order for the campaign's mode (extended adds find-easy and find-hard).
IO500_PHASES = io500_order((CAMPAIGN["io500"] or {}).get("mode", "standard"))


wildcard_constraints:
    **WILDCARDS,
    target="|".join(TARGETS),


# The step scripts of the rules that turn records into tables and plots (rules/analysis.smk): every fsbench file they
# import is in the digest that reruns them (fsbench.workflow.digest, tests/test_rerun.py).
ANALYSIS_SCRIPTS = ["aggregate.py", "plot.py", "scaling.py"]
ANALYSIS_CODE = analysis_digest(
    [Path(workflow.basedir, "scripts", s) for s in ANALYSIS_SCRIPTS]
)


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


def io500_phases(host, array, target):
    """An IO500 cell's phases, in order: today's, or those a finished cell of an older method holds."""
    return PLAN.io500_phases(host, array, target, tuple(IO500_PHASES))


def io500_outputs(host=None, array=None):
    """What tells that an IO500 cell is finished: its last phase's record."""
    return [
        record_file(io500_phases(h, a, t)[-1], 1, f"{h}/{a}/{t}/io500")
        for h, a, t in IO500_PLACES
        if host in (None, h) and array in (None, a)
    ]


def array_outputs(wildcards):
    return cell_outputs(wildcards.host, wildcards.array)


def plot_files(as_report_items=False):
    """The plots as files (fsbench.plots.table: those the campaign has). For rule plots, the PNGs as report items
    with a caption saying what was measured and how (only there: an item is credited to the rule whose output it is).
    """
    files = []
    for plot in campaign_plots(CAMPAIGN):
        png, svg = plot.files(f"{RESULTS}/plots")
        caption = f"{workflow.basedir}/{plot.caption}"  # called from the Snakefile, not from here
        if as_report_items:
            png = report(png, caption=caption, category="Plots")
        files += [png, svg]
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
        *(
            [f"{RESULTS}/scaling.csv", f"{RESULTS}/plots/scaling.png"]
            if CAMPAIGN["clients"]
            else []
        ),
    ]


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
        for phase in io500_phases(h, a, t)
    ]


def io500_cell(wildcards):
    return PLAN.cell_spec(wildcards.host, wildcards.array, wildcards.target, "io500", 1)


def io500_priority(wildcards):
    return PLAN.priority(wildcards.host, wildcards.array, wildcards.target, "io500", 1)


def io500_input(phase):
    """The phase before (its record and state), or for the first the target's setup: mount, or the array."""

    def found(wildcards):
        cell = IO500_CELL.format(**wildcards)
        phases = io500_phases(wildcards.host, wildcards.array, wildcards.target)
        i = phases.index(phase)
        if i > 0:
            before = phases[i - 1]
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
