"""make bench-dag: fsbench's planning cost per job beside a bare one-rule Snakemake workflow's with as many jobs.

Two runs, each timed as the wall-clock seconds of the whole `snakemake` process: (1) `snakemake -n` of a large
campaign (~2,000 cells and repeats, ~7,200 jobs), nothing done yet; (2) `snakemake --cores 2` of a finished
campaign (~400 jobs) whose outputs are empty files made here, a no-op. Beside each, two workflows written into
the tempdir with exactly fsbench's job count (their `all` included): "bare", one rule that touches its output,
the floor Snakemake itself costs per job; and "shaped", that rule in the shape of every fsbench step (log,
conda, a params function, storage_io, a script), which tells what Snakemake charges for a step of that shape
from what fsbench's own graph adds (dependencies between steps, temp state files, priorities, threads).

The machine may be shared and noisy, so the three run side by side: fsbench, bare, shaped, fsbench, bare,
shaped, ... for ROUNDS rounds; the ratio fsbench/bare (and fsbench/shaped) is taken per round and its median
over rounds reported. Goal (issue 11): both ratios ≤ 1.5. Also: how many jobs a cell costs, and what that
makes the dry run of 10,000 cells cost at the measured per-job cost (computed, not run).

Nothing is attached, made or mounted: every workdir and the scratch live in a tempdir removed at the end.
Prints the table and writes it to docs/bench-dag.md. The goal is for planning, never asserted in tests.

SMOKE=1 (tests/test_benchmarks.py): tiny campaigns, one round, the table printed and no doc written: that it
still runs, the job formula included, not what it measures.
"""

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from fsbench.campaign.cells import cells, measuring_hosts  # noqa: E402
from fsbench.campaign.config import validate  # noqa: E402

SNAKEMAKE = str(REPO / ".venv/bin/snakemake")
# fsbench's runs get it by themselves (a workflow profile); the comparison workflows are given it, so that all
# three run with the same settings (storage_io=1, rerun-incomplete, no Snakemake directory lock).
PROFILE = REPO / "profiles" / "default"
SMOKE = os.environ.get("SMOKE", "") not in ("", "0")
ROUNDS = 1 if SMOKE else 3
GOAL = 1.5  # fsbench's seconds per job at most this many times the comparison workflow's
WORKFLOWS = ("fsbench", "bare", "shaped")
# The jobs a cell and repeat costs: its device steps. Raw and path targets are written on the array itself.
STEPS = {"filesystem": ("mkfs", "mount", "write", "read"), "raw": ("write", "read"), "path": ("write", "read")}
PER_ARRAY = ("prepare_array", "release")  # per host × array
PER_CAMPAIGN = ("aggregate", "plots", "provenance", "all")
# Per campaign, where its config asks for them (rules/common.smk's targets).
IF_CONFIGURED = {
    "baselines": lambda config: bool(config["baselines"]),
    "history": lambda config: config["history"] is not False,
    "compare": lambda config: bool(config["compare_to"]),
}

FILESYSTEMS = {"ext3": {"type": "ext3"}, "ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}, "btrfs": {"type": "btrfs"}}
LARGE = {  # 1 array × (raw + 4 filesystems) × 4 block sizes × 2 patterns × 2 direct × 5 streams × 5 repeats
    "campaign": "large",
    "arrays": {"a0": {"kind": "loop", "size": "2GiB"}},
    "filesystems": FILESYSTEMS,
    "io": {
        "size": "64MiB",
        "block_sizes": ["4KiB", "64KiB", "1MiB", "4MiB"],
        "patterns": ["seq", "rand"],
        "direct": [False, True],
        "streams": [1, 2, 4, 8, 16],
        "repeats": 5,
    },
}
HUGE = {  # not run: its job count, by the formula, for what planning 10,000 cells would take
    **LARGE,
    "campaign": "huge",
    "arrays": {f"a{i}": {"kind": "loop", "size": "2GiB"} for i in range(4)},
    "io": {**LARGE["io"], "block_sizes": ["4KiB", "64KiB", "1MiB", "4MiB", "16MiB"]},
}
FINISHED = {  # 1 array × (raw + 4 filesystems) × 2 block sizes × 11 repeats
    "campaign": "finished",
    "arrays": {"demo": {"kind": "loop", "size": "1GiB"}},
    "filesystems": FILESYSTEMS,
    "io": {"size": "512MiB", "block_sizes": ["1MiB", "4MiB"], "repeats": 11},
}
if SMOKE:  # raw and one filesystem, one of everything
    SMALL_IO = {"size": "1MiB", "block_sizes": ["1MiB"], "patterns": ["seq"], "direct": [True], "repeats": 1}
    LARGE = {**LARGE, "filesystems": {"ext4": {"type": "ext4"}}, "io": SMALL_IO}
    FINISHED = {**FINISHED, "filesystems": {"ext4": {"type": "ext4"}}, "io": SMALL_IO}
SHAPES = {
    "large": "1 loop array × (raw + ext3, ext4, xfs, btrfs) × 4 block sizes × 2 patterns × 2 direct × 5 streams × "
    "5 repeats; nothing done yet",
    "finished": "1 loop array × (raw + ext3, ext4, xfs, btrfs) × 2 block sizes × 11 repeats; every output an empty "
    "file with one mtime, the temp state files absent (as after a real run), `-n` says nothing to be done",
    "10,000 cells": "4 loop arrays × (raw + ext3, ext4, xfs, btrfs) × 5 block sizes × 2 patterns × 2 direct × "
    "5 streams × 5 repeats (the campaign this benchmark planned before; its jobs counted, not run)",
}

BARE = """rule all:
    input:
        expand("out/{{i}}.txt", i=range({n})),


rule one:
    output:
        "out/{{i}}.txt",
    shell:
        "touch {{output}}"
"""
SHAPED = """rule all:
    input:
        expand("out/{{i}}.txt", i=range({n})),


rule one:
    output:
        "out/{{i}}.txt",
    log:
        "logs/{{i}}.log",
    conda:
        "env.yaml"
    resources:
        storage_io=1,
    params:
        cell=lambda wildcards: {{"i": wildcards.i, "name": f"cell {{wildcards.i}}"}},
    script:
        "s.py"
"""
SHAPED_ENV = "channels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
SHAPED_SCRIPT = "from pathlib import Path\n\nfor path in [*snakemake.output, *snakemake.log]:\n    Path(path).touch()\n"


def fsbench(tmp: Path, configfile: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp / "work"), "--configfile", str(configfile), *args]


def comparison(folder: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(folder / "Snakefile"), "-d", str(folder), "--workflow-profile", str(PROFILE), *args]


def run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Wall-clock seconds of the whole process, and what it printed."""
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return seconds, done.stdout + done.stderr


def campaign(tmp: Path, config: dict) -> tuple[Path, int]:
    """The campaign file, with its scratch in the tempdir, and its number of cells and repeats."""
    config = config | {"scratch": str(tmp / "scratch")}
    path = tmp / f"{config['campaign']}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, sum(1 for _ in cells(validate(config)))


def job_stats(dry_run: str) -> dict[str, int]:
    """The dry run's job stats: jobs per rule, and the total."""
    table = dry_run[dry_run.index("Job stats:") :].split("\n\n")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def expected_jobs(config: dict) -> dict[str, int]:
    """What fsbench plans for a campaign of fixed repeats, per rule and in total: per cell and repeat its steps,
    per host × array prepare_array and release, per campaign aggregate, plots, provenance and all (and baselines,
    history, compare where the config asks for them)."""
    config = validate(config | {"scratch": "/nonexistent"})
    jobs = Counter(step for c in cells(config) for step in STEPS.get(c.target, STEPS["filesystem"]))
    jobs.update({rule: len(measuring_hosts(config)) * len(config["arrays"]) for rule in PER_ARRAY})
    jobs.update([*PER_CAMPAIGN, *(rule for rule, asked in IF_CONFIGURED.items() if asked(config))])
    return dict(jobs) | {"total": sum(jobs.values())}


def check_formula(config: dict, stats: dict[str, int]) -> None:
    """The formula against the dry run's job stats, rule by rule: a rule added to the workflow (or dropped) stops
    the benchmark, naming it, and tests/test_benchmarks.py runs this in CI."""
    expected = expected_jobs(config)
    if expected != stats:
        off = {r: (expected.get(r, 0), stats.get(r, 0)) for r in expected | stats if expected.get(r) != stats.get(r)}
        sys.exit(
            f"the job formula and the dry run of campaign {config['campaign']} differ (rule: formula, dry run): "
            f"{off}; update STEPS, PER_ARRAY, PER_CAMPAIGN or IF_CONFIGURED in benchmarks/dag.py"
        )


def finish(tmp: Path, configfile: Path) -> None:
    """Make every output of the DAG an empty file, all with one mtime; temp state files stay absent.

    `--summary` lists every output with its status; a temp() output (a step's state file,
    results/<campaign>/state/.../*.ready) shows as 'removed temp file' whether or not it was ever made.
    """
    _, summary = run(fsbench(tmp, configfile, "--summary"), tmp)
    rows = [line.split("\t") for line in summary.splitlines() if "\t" in line]
    now = time.time()
    for name, _, _, _, status, _ in rows[1:]:  # rows[0] is the header: output_file, date, rule, log, status, plan
        if status == "removed temp file":
            if not name.endswith(".ready"):
                sys.exit(f"--summary calls {name} a temp file: only the state files (*.ready) should be")
            continue
        path = tmp / "work" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (now, now))
    nothing_to_do(fsbench(tmp, configfile, "-n"), tmp)


def nothing_to_do(dry_run: list[str], cwd: Path) -> None:
    _, out = run(dry_run, cwd)
    if "Nothing to be done" not in out:
        sys.exit(f"{' '.join(dry_run)}: the finished workflow still has work to do:\n{out}")


def write_comparison(folder: Path, name: str, n_jobs: int) -> Path:
    """The bare or shaped workflow with n_jobs jobs: n_jobs - 1 of its one rule, and all."""
    folder.mkdir()
    (folder / "Snakefile").write_text({"bare": BARE, "shaped": SHAPED}[name].format(n=n_jobs - 1))
    if name == "shaped":
        (folder / "env.yaml").write_text(SHAPED_ENV)
        (folder / "s.py").write_text(SHAPED_SCRIPT)
    return folder


def finish_comparison(folder: Path) -> None:
    """Run it once for real (its jobs touch files; both cores, whatever storage_io the profile sets), then
    forget Snakemake's metadata: fsbench's finished outputs (made by finish, not by a run) have none, and so
    all three are judged from the same state, every output present and no record of the jobs that made them.
    """
    run(comparison(folder, "--cores", "2", "--resources", "storage_io=2"), folder)
    shutil.rmtree(folder / ".snakemake" / "metadata")
    nothing_to_do(comparison(folder, "-n"), folder)


@dataclass
class Measured:
    what: str
    shape: str
    n_jobs: int
    n_cells: int
    stats: dict[str, int]
    seconds: dict[str, list[float]]  # per workflow, one per round

    def median(self, name: str) -> float:
        return statistics.median(self.seconds[name])

    def ratios(self, name: str) -> list[float]:
        """fsbench's seconds per job over name's, per round (both have n_jobs jobs)."""
        return [f / c for f, c in zip(self.seconds["fsbench"], self.seconds[name], strict=True)]


def side_by_side(what: str, fsbench_run: tuple[list[str], Path], comparisons: dict, n_jobs: int | None):
    """ROUNDS rounds of fsbench, bare, shaped back to back. The comparison workflows are written once fsbench's
    job count is known (from round 1's dry run when n_jobs is None)."""
    seconds = {name: [] for name in WORKFLOWS}
    out = ""
    for r in range(1, ROUNDS + 1):
        print(f"{what}, round {r}/{ROUNDS}: fsbench", file=sys.stderr)
        took, out = run(*fsbench_run)
        seconds["fsbench"].append(took)
        if n_jobs is None:
            n_jobs = job_stats(out)["total"]
        for name, (make, cmd) in comparisons.items():
            print(f"{what}, round {r}/{ROUNDS}: {name}", file=sys.stderr)
            folder = make(name, n_jobs)
            seconds[name].append(run(cmd(folder), folder)[0])
    return seconds, out


def dry_runs(tmp: Path) -> Measured:
    configfile, n_cells = campaign(tmp, LARGE)
    folders = {}

    def make(name, n_jobs):
        if name not in folders:
            folders[name] = write_comparison(tmp / f"dry-{name}", name, n_jobs)
        return folders[name]

    comparisons = {name: (make, lambda folder: comparison(folder, "-n")) for name in WORKFLOWS[1:]}
    seconds, out = side_by_side("dry run", (fsbench(tmp, configfile, "-n"), tmp), comparisons, None)
    stats = job_stats(out)
    check_formula(LARGE, stats)
    return Measured("dry run `snakemake -n`, large", SHAPES["large"], stats["total"], n_cells, stats, seconds)


def noop_runs(tmp: Path) -> Measured:
    configfile, n_cells = campaign(tmp, FINISHED)
    _, out = run(fsbench(tmp, configfile, "-n"), tmp)
    stats = job_stats(out)
    check_formula(FINISHED, stats)
    finish(tmp, configfile)
    folders = {}
    for name in WORKFLOWS[1:]:
        print(f"no-op run: making every output of {name} ({stats['total']} jobs)", file=sys.stderr)
        folders[name] = write_comparison(tmp / f"noop-{name}", name, stats["total"])
        finish_comparison(folders[name])
    comparisons = {
        name: (lambda name, _: folders[name], lambda folder: comparison(folder, "--cores", "2"))
        for name in WORKFLOWS[1:]
    }
    fsbench_run = (fsbench(tmp, configfile, "--cores", "2"), tmp)
    seconds, _ = side_by_side("no-op run", fsbench_run, comparisons, stats["total"])
    return Measured(
        "no-op run `snakemake --cores 2`, finished", SHAPES["finished"], stats["total"], n_cells, stats, seconds
    )


def main() -> int:
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="fsbench-dag-"))
    try:
        measured = [dry_runs(tmp), noop_runs(tmp)]
    finally:
        shutil.rmtree(tmp)
    table = render(measured, load, os.getloadavg()[0])
    print(table)
    if not SMOKE:
        (REPO / "docs" / "bench-dag.md").write_text(table)
    return 0


def render(measured: list[Measured], load: float, load_end: float) -> str:
    host = f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}"
    lines = [
        "# DAG benchmark: fsbench's planning cost per job beside a bare Snakemake workflow's",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {host}, load average {load:.2f} at the start and {load_end:.2f} "
        "at the end. `make bench-dag`: wall-clock seconds of the whole `.venv/bin/snakemake` process (start-up "
        f"included). fsbench, bare and shaped run side by side, one after the other, in each of {ROUNDS} rounds; "
        f"seconds are medians of the {ROUNDS} rounds, a ratio is fsbench's over the other's in each round (both "
        f"have the same number of jobs), median over the rounds. Goal: both ratios ≤ {GOAL}. No device is touched.",
        "",
        f"| run | workflow | jobs | seconds | ms per job | fsbench / this | ≤ {GOAL} |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for m in measured:
        for name in WORKFLOWS:
            per_job = 1000 * m.median(name) / m.n_jobs
            if name == "fsbench":
                ratio, met = "–", "–"
            else:
                median = statistics.median(m.ratios(name))
                ratio, met = f"{median:.2f}", "met" if median <= GOAL else "not met"
            lines.append(f"| {m.what} | {name} | {m.n_jobs} | {m.median(name):.1f} | {per_job:.2f} | {ratio} | {met} |")
    lines += ["", *(f"- {m.what.split(', ')[-1]}: {m.shape}; {m.n_cells} cells and repeats" for m in measured)]
    lines += [
        '- bare: one rule, `output: "out/{i}.txt"`, `shell: "touch {output}"`, and `all` asking for as many of '
        "its outputs as make fsbench's job count: what Snakemake itself costs per job.",
        "- shaped: that rule in the shape of every fsbench step: `log:`, `conda:` (a small env file; no `--sdm "
        "conda`, as in fsbench's runs), `params:` with one function, `resources: storage_io=1`, `script:` (one that "
        "touches its output and log). The gap from bare is what Snakemake charges for a step of that shape; the "
        "gap from shaped to fsbench is what fsbench's own graph adds (each step's inputs from the step before, the "
        "temp state files, a priority and threads per job, params from the cell).",
        "- all three with fsbench's workflow profile (storage_io=1, rerun-incomplete, no directory lock). For the "
        "no-op, bare and shaped ran once for real (their jobs touch files), then their `.snakemake/metadata` was "
        "removed: fsbench's finished outputs are made as empty files, not by a run, so they have none, and all "
        "three are judged from the same state.",
    ]
    for m in measured:
        per_round = "; ".join(f"{name}: {', '.join(f'{r:.2f}' for r in m.ratios(name))}" for name in WORKFLOWS[1:])
        lines.append(f"- ratios per round, {m.what.split(', ')[-1]}: {per_round}.")
    lines += ["", *cost(measured[0])]
    return "\n".join(lines) + "\n"


def cost(dry: Measured) -> list[str]:
    """How many jobs a cell costs, what fsbench spends on them, and what 10,000 cells would take to plan."""
    per_job = {name: dry.median(name) / dry.n_jobs for name in WORKFLOWS}
    bare, shaped, own = per_job["bare"], per_job["shaped"] - per_job["bare"], per_job["fsbench"] - per_job["shaped"]
    huge = expected_jobs(HUGE)["total"]
    huge_cells = sum(1 for _ in cells(validate(HUGE | {"scratch": "/nonexistent"})))
    rules = ", ".join(f"{rule} {n}" for rule, n in dry.stats.items() if rule != "total")
    return [
        "## What a cell costs",
        "",
        f"Per cell and repeat: {len(STEPS['filesystem'])} jobs for a filesystem target "
        f"({', '.join(STEPS['filesystem'])}), {len(STEPS['raw'])} for a raw or path target "
        f"({', '.join(STEPS['raw'])}). Per host × array: {len(PER_ARRAY)} ({', '.join(PER_ARRAY)}). Per campaign: "
        f"{len(PER_CAMPAIGN)} ({', '.join(PER_CAMPAIGN)}), and {', '.join(IF_CONFIGURED)} where the campaign asks "
        "for them. Checked "
        f"against both dry runs' job stats; the large campaign's: {rules}, total {dry.n_jobs}.",
        "",
        f"In the dry run fsbench spends {1000 * per_job['fsbench']:.2f} ms per job: Snakemake's floor "
        f"{1000 * bare:.2f} ms (bare), the step's shape {1000 * shaped:+.2f} ms (shaped − bare), fsbench's own "
        f"graph {1000 * own:+.2f} ms (fsbench − shaped), medians over the rounds. So a filesystem cell and repeat "
        f"costs {4 * 1000 * per_job['fsbench']:.0f} ms of planning, a raw one {2 * 1000 * per_job['fsbench']:.0f} ms.",
        "",
        f"10,000 cells and repeats ({SHAPES['10,000 cells']}): {huge_cells} cells, {huge} jobs by the count above; "
        f"at the measured cost per job a dry run would take about {huge * per_job['fsbench']:.0f} s with fsbench, "
        f"against {huge * bare:.0f} s for the bare workflow with as many jobs (computed from the large campaign's "
        "per-job cost, assuming it holds at that size; not run).",
    ]


if __name__ == "__main__":
    sys.exit(main())
