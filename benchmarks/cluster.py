"""make bench-cluster: one small campaign run locally and through a real local Slurm (tools/slurm_local.py, one
node, then two), side by side, and what a cluster job pays before it measures anything.

The campaign (issue 22): a loop array, raw + ext4 + xfs, 1 MiB blocks, 2 repeats, 128 MiB per measurement,
`hosts: [this node]`; on two nodes the same with `hosts: [this node, fsbench-n2]` (twice the cells, one group job
per node, at the same time). Each run is timed as the wall-clock seconds of the whole `snakemake` process; Slurm
jobs are counted from Slurm's own job log (jobcomp); "measuring" is the seconds the measurements took by their
records (write up to its flush, read), summed. The machine may be shared and noisy, so the three run in turn,
ROUNDS rounds, and the ratio to the local run of the same round is reported per round. Goal (issue 22): through
Slurm on one node at most 5 Slurm jobs and at most 1.5 × local + 60 s.

Then the start of Snakemake inside a group job, for a 10-cell and a 2,000-cell campaign: the Snakemake a Slurm
job starts reads the workflow and plans the jobs it is given (`--target-jobs`, as the Slurm executor passes them,
and again in the srun step it starts); timed here as that command with `-n`, given one step, or every device step
of the array and host (the whole group job). Nothing is attached for that part.

Needs root (loop devices, Slurm). Run it under `flock /tmp/fsbench-slurm.lock` (the Makefile does): one local Slurm
at a time on a machine. Prints the table and writes it to docs/bench-cluster.md.

SMOKE=1 (tests/test_benchmarks.py): 4 MiB per measurement, one repeat, one round, each start timed once (the
2,000-cell campaign is bench-dag's smoke one), the table printed and no doc written: that it still runs, not what
it measures.
"""

import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "benchmarks"))

import slurm_local  # noqa: E402
from dag import FILESYSTEMS  # noqa: E402
from dag import LARGE as DAG_LARGE  # noqa: E402

from fsbench.campaign.cells import MetaCell, cells  # noqa: E402
from fsbench.campaign.config import validate  # noqa: E402
from fsbench.storage import devices  # noqa: E402
from fsbench.toolkit.system import exit_on_sigterm  # noqa: E402

SNAKEMAKE = str(REPO / ".venv/bin/snakemake")
SLURM = ["--profile", str(REPO / "profiles" / "slurm")]
SMOKE = os.environ.get("SMOKE", "") not in ("", "0")
ROUNDS = 1 if SMOKE else int(os.environ.get("ROUNDS", "2"))
IO = (
    {"size": "4MiB", "block_sizes": ["1MiB"], "repeats": 1}
    if SMOKE
    else {"size": "128MiB", "block_sizes": ["1MiB"], "repeats": 2}
)
LIMIT = 300  # seconds: a start that takes longer is reported as more than this
HERE, OTHER = socket.gethostname(), "fsbench-n2"
SCRATCH = Path("/var/tmp/fsbench-bench-cluster")
GOAL_JOBS, GOAL_RATIO, GOAL_PLUS = 5, 1.5, 60


def small(scratch: Path, name: str, hosts: list[str]) -> dict:
    return {
        "campaign": name,
        "scratch": str(scratch),
        "hosts": hosts,
        "arrays": {"demo": {"kind": "loop", "size": "640MiB"}},
        "filesystems": {"ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}},
        "io": IO,
    }


TEN = {  # raw + 4 filesystems × 1 test × 2 repeats
    "arrays": {"demo": {"kind": "loop", "size": "1GiB"}},
    "filesystems": FILESYSTEMS,
    "io": IO,
}
# As bench-dag's (2,000 cells and repeats), under this benchmark's own campaign name.
LARGE = {key: value for key, value in DAG_LARGE.items() if key != "campaign"}


def timed(argv: list[str], cwd: Path, env: dict | None = None, check: bool = True) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=os.environ | (env or {}))
    seconds = time.perf_counter() - started
    if check and done.returncode:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}{done.stderr[-6000:]}")
    return seconds, done.stdout + done.stderr


def campaign_run(work: Path, config: dict, *args: str, env: dict | None = None) -> tuple[float, Path]:
    work.mkdir(parents=True)
    cfg = work / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--cores", "2", *args, "--configfile", str(cfg)]
    seconds, _ = timed(argv, work, env)
    return seconds, work / "results" / config["campaign"]


def measuring(results: Path) -> float:
    df = pd.read_csv(results / "measurements.csv")
    return float(df[["seconds", "seconds_durable"]].max(axis=1).sum())


def job_log(base: Path, work: Path) -> list[dict]:
    """Slurm's own record of the jobs run from `work`: start and end (seconds since the epoch) and node."""
    jobs = []
    for line in (base / "log" / "jobcomp.txt").read_text().splitlines():
        if f"WorkDir={work} " in line:
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            stamp = {k: datetime.fromisoformat(fields[k]).timestamp() for k in ("StartTime", "EndTime")}
            jobs.append(stamp | {"node": fields["NodeList"], "state": fields["JobState"]})
    return jobs


def first_step(results: Path, host: str) -> float:
    """When the first device step on `host` began (prepare_array's record)."""
    record = json.loads((results / "runs" / host / "demo" / "array.json").read_text())
    return datetime.fromisoformat(record["started_at"]).timestamp()


def one_round(tmp: Path, n: int) -> dict:
    """Local, Slurm on one node, Slurm on two nodes: each a fresh campaign (its own name, scratch and workdir)."""
    row = {}
    scratch = SCRATCH / uuid.uuid4().hex[:8]
    try:
        seconds, results = campaign_run(tmp / f"local{n}", small(scratch, f"local{n}", [HERE]))
        row["local"] = {"seconds": seconds, "jobs": 0, "measuring": measuring(results)}
        for nodes, hosts in ((1, [HERE]), (2, [HERE, OTHER])):
            base = tmp / f"slurm{nodes}-{n}"
            env = slurm_local.start(base, nodes)
            try:
                work = tmp / f"slurm{nodes}-work{n}"
                seconds, results = campaign_run(work, small(scratch, f"slurm{nodes}r{n}", hosts), *SLURM, env=env)
                jobs = job_log(base, work)
            finally:
                slurm_local.stop(base)
            assert all(j["state"] == "COMPLETED" for j in jobs), jobs
            starts = [first_step(results, j["node"]) - j["StartTime"] for j in jobs if j["node"] in hosts]
            row[f"slurm {nodes}"] = {
                "seconds": seconds,
                "jobs": len(jobs),
                "measuring": measuring(results),
                "to_first_step": max(starts),
            }
    finally:
        devices.release(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    return row


def group_targets(config: dict, rep: int | None = None) -> list[str]:
    """The device steps of the campaign's one array on its one host (of one round, `rep`), as --target-jobs names
    them: what profiles/slurm puts in one group job (per round: what a per-round grouping would)."""
    c = validate(config)
    host, (array,) = c["hosts"][0], c["arrays"]
    specs = [f"prepare_array:host={host},array={array}"]
    for cell in cells(c):
        if isinstance(cell, MetaCell) or rep not in (None, cell.rep):
            continue
        w = f"host={cell.host},array={cell.array},target={cell.target},test={cell.test},rep={cell.rep}"
        steps = ("write", "read") if cell.target == "raw" else ("mkfs", "mount", "write", "read")
        specs += [f"{step}:{w}" for step in steps]
    return specs + ([f"release:host={host},array={array}"] if rep is None else [])


def start_in_job(tmp: Path, name: str, shape: dict, runs: int, per_round: bool) -> dict:
    """Seconds for the Snakemake a group job starts to read the workflow and plan the steps it is given (-n, as
    that Snakemake is called, its group formed as in a job), for one step, one round's steps (`per_round`) and
    the whole group; median of `runs`; a run over LIMIT seconds is stopped and counted as None."""
    config = shape | {"campaign": name, "scratch": str(tmp / "no-scratch"), "hosts": [HERE]}
    work = tmp / f"start-{name}"
    work.mkdir()
    cfg = work / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    given = {"one": group_targets(config)[:1], "whole": group_targets(config)}
    if per_round:
        given["round"] = group_targets(config, rep=1)
    inner = ["--cores", "all", "--mode", "remote", "--local-groupid", "bench", "--force", "--nolock"]
    inner += ["--ignore-incomplete", "-n", "--max-inventory-time", "0", "--configfile", str(cfg)]
    found = {"cells": sum(1 for _ in cells(validate(config)))}
    for what, targets in given.items():
        rules = sorted({t.split(":")[0] for t in targets})
        argv = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--target-jobs", *targets, "--allowed-rules", *rules]
        seconds = []
        for _ in range(runs):
            try:
                started = time.perf_counter()
                subprocess.run([*argv, *inner], cwd=work, capture_output=True, timeout=LIMIT, check=True)
                seconds.append(time.perf_counter() - started)
            except subprocess.TimeoutExpired:
                seconds.append(None)
                break
        found[what] = None if None in seconds else statistics.median(seconds)
        found[f"{what}_jobs"] = len(targets)
    return found | {"layers": layering(found["cells"])}


def layering(n: int) -> float:
    """Seconds Snakemake takes to work out what a group job asks Slurm for when `n` of its steps could run side by
    side (a cell's first steps, as a group's toposort level holds them) but storage_io admits one at a time: it
    stacks them into layers, trying every layer for every step (Snakemake's GroupResources, called directly)."""
    from snakemake.resources import GroupResources

    steps = {"storage_io": 1, "_cores": 1, "mem_mb": 2048, "runtime": 120, "nodes": 1, "tasks": 1, "io_h": 1}
    limits = [1, os.cpu_count(), None, None, None, None, 1]
    started = time.perf_counter()
    GroupResources._get_layers({k: [v] * n for k, v in steps.items()}, limits, ["runtime"])
    return time.perf_counter() - started


def table(rounds: list[dict], starts: list[dict]) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# What a campaign costs through Slurm (make bench-cluster)",
        "",
        f"Measured {now} on {platform.node()} ({os.cpu_count()} CPUs, shared), Snakemake with "
        "snakemake-executor-plugin-slurm through `profiles/slurm`, on the real local Slurm of tools/slurm_local.py. "
        "The campaign: a 640 MiB loop array, raw + ext4 + xfs, 1 MiB blocks, 2 repeats, 128 MiB each (12 "
        "measurements per host); on two nodes the same on each (24). Wall time is the whole `snakemake` "
        "process; Slurm jobs from Slurm's job log; measuring is the seconds of the measurements by their "
        "records (write to its flush, read), summed; ratio is to the local run of the same round. "
        '"Job start to first step" is from Slurm\'s start of the group job to its first step (prepare_array) '
        "beginning: the Snakemake the job starts, and the one in its srun step.",
        "",
        "| round | run | wall s | Slurm jobs | measuring s | ratio to local | job start to first step s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, row in enumerate(rounds, start=1):
        local = row["local"]["seconds"]
        for run, r in row.items():
            first = f"{r['to_first_step']:.1f}" if "to_first_step" in r else ""
            lines.append(
                f"| {i} | {run} | {r['seconds']:.1f} | {r['jobs']} | {r['measuring']:.1f} | "
                f"{r['seconds'] / local:.2f} | {first} |"
            )
    one = [row["slurm 1"] for row in rounds]
    met = all(r["jobs"] <= GOAL_JOBS for r in one) and all(
        row["slurm 1"]["seconds"] <= GOAL_RATIO * row["local"]["seconds"] + GOAL_PLUS for row in rounds
    )
    lines += [
        "",
        f"Goal (issue 22), Slurm on one node: at most {GOAL_JOBS} Slurm jobs and at most {GOAL_RATIO} × local + "
        f"{GOAL_PLUS} s: {'met in every round' if met else 'NOT met in every round'}. Two nodes (twice the cells, "
        "one group job per node, at once) took "
        f"{statistics.median(r['slurm 2']['seconds'] / r['slurm 1']['seconds'] for r in rounds):.2f} × the wall "
        "time of one node (median over rounds).",
        "",
        "## The Snakemake start inside a job",
        "",
        "The command a group job's Snakemake runs (`--target-jobs`, `--mode remote`, its group formed as in a "
        "job), with `-n`: given one of the group's steps, one round's steps (a per-round grouping's job), or all "
        f"of them (profiles/slurm's job); the median of 3 runs for 10 cells, one run for 2,000 (stopped after "
        f"{LIMIT} s). It runs twice per group job: the job, and the srun step the job starts.",
        "",
        "| campaign | cells | one step s | one round: jobs, s | whole group: jobs, s | layering s |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def secs(value):
        return f"> {LIMIT}" if value is None else f"{value:.1f}"

    for s in starts:
        one_round = f"{s['round_jobs']}, {secs(s['round'])}" if "round" in s else ""
        lines.append(
            f"| {s['name']} | {s['cells']} | {secs(s['one'])} | {one_round} | {s['whole_jobs']}, "
            f"{secs(s['whole'])} | {s['layers']:.2f} |"
        )
    lines += [
        "",
        '"One step" is what every job pays whatever its size: starting Snakemake, reading the workflow and the '
        "campaign. The rest grows with the job's steps: planning them, and Snakemake's checks of a group, which "
        'visit every step once for every step of its group (quadratic). "Layering" is one more cost of a large '
        "group, Snakemake's, paid where the job is submitted: to size it Snakemake stacks the steps that could run "
        "side by side into layers one storage_io wide, trying each layer for each step (here one level as wide as "
        "the campaign's cells, timed once). Where a group grows too large, a profile can group per round (see "
        "profiles/slurm).",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    if os.geteuid() != 0:
        return "bench-cluster needs root (loop devices, mkfs, mount, Slurm)"
    with tempfile.TemporaryDirectory(prefix="fsbench-bench-cluster-") as tmp:
        tmp = Path(tmp)
        rounds = []
        for n in range(1, ROUNDS + 1):
            rounds.append(one_round(tmp, n))
            print(f"round {n}: " + ", ".join(f"{k} {v['seconds']:.1f} s" for k, v in rounds[-1].items()), flush=True)
        starts = [
            start_in_job(tmp, "ten", TEN, runs=1 if SMOKE else 3, per_round=False) | {"name": "10 cells"},
            start_in_job(tmp, "large", LARGE, runs=1, per_round=True) | {"name": "2,000 cells"},
        ]
    text = table(rounds, starts)
    print(text)
    if not SMOKE:
        (REPO / "docs" / "bench-cluster.md").write_text(text)
    return 0


if __name__ == "__main__":
    exit_on_sigterm()  # a killed benchmark releases its devices
    sys.exit(main())
