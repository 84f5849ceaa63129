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

import slurm_local  # noqa: E402

from fsbench import devices  # noqa: E402
from fsbench.config import MetaCell, cells, validate  # noqa: E402

SNAKEMAKE = str(REPO / ".venv/bin/snakemake")
SLURM = ["--profile", str(REPO / "profiles" / "slurm")]
ROUNDS = int(os.environ.get("ROUNDS", "2"))
START_ROUNDS = 2
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
        "io": {"size": "128MiB", "block_sizes": ["1MiB"], "repeats": 2},
    }


FILESYSTEMS = {"ext3": {"type": "ext3"}, "ext4": {"type": "ext4"}, "xfs": {"type": "xfs"}, "btrfs": {"type": "btrfs"}}
TEN = {  # raw + 4 filesystems × 1 test × 2 repeats
    "arrays": {"demo": {"kind": "loop", "size": "1GiB"}},
    "filesystems": FILESYSTEMS,
    "io": {"size": "128MiB", "block_sizes": ["1MiB"], "repeats": 2},
}
LARGE = {  # raw + 4 filesystems × 4 block sizes × 2 patterns × 2 direct × 5 streams × 5 repeats (as bench-dag)
    "arrays": {"demo": {"kind": "loop", "size": "2GiB"}},
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


def group_targets(config: dict) -> list[str]:
    """Every device step of the campaign's one array on its one host, as --target-jobs names them."""
    c = validate(config)
    host, (array,) = c["hosts"][0], c["arrays"]
    specs = [f"prepare_array:host={host},array={array}", f"release:host={host},array={array}"]
    for cell in cells(c):
        if isinstance(cell, MetaCell):
            continue
        w = f"host={cell.host},array={cell.array},target={cell.target},test={cell.test},rep={cell.rep}"
        steps = ("write", "read") if cell.target == "raw" else ("mkfs", "mount", "write", "read")
        specs += [f"{step}:{w}" for step in steps]
    return specs


def start_in_job(tmp: Path, name: str, shape: dict) -> dict:
    """Seconds for the Snakemake in a group job to read the workflow and plan what it is given (-n), for one step
    and for the whole group; and the campaign's cells and the group's jobs."""
    config = shape | {"campaign": name, "scratch": str(tmp / "no-scratch"), "hosts": [HERE]}
    work = tmp / f"start-{name}"
    work.mkdir()
    cfg = work / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    targets = group_targets(config)
    n_cells = sum(1 for _ in cells(validate(config)))
    inner = ["--cores", "all", "--mode", "remote", "--force", "--nolock", "--ignore-incomplete", "-n"]
    inner += ["--max-inventory-time", "0", "--configfile", str(cfg)]
    one, group = [], []
    for _ in range(START_ROUNDS):
        for given, into in ((targets[:1], one), (targets, group)):
            rules = sorted({t.split(":")[0] for t in given})
            argv = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "--target-jobs", *given, "--allowed-rules", *rules]
            into.append(timed([*argv, *inner], work)[0])
    return {"cells": n_cells, "jobs": len(targets), "one": statistics.median(one), "group": statistics.median(group)}


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
        f"{GOAL_PLUS} s: {'met' if met else 'NOT met'} in every round. Two nodes measure twice the cells in about "
        "the time of one: their group jobs run at once (hosts with their own loop arrays).",
        "",
        "## The Snakemake start inside a job",
        "",
        "The command a group job's Snakemake runs (`--target-jobs`, `--mode remote`), with `-n`, given one of the "
        "group's steps or all of them; median of " + f"{START_ROUNDS} runs. It runs twice per group job (the job, "
        "and the srun step the job starts).",
        "",
        "| campaign | cells | group's jobs | one step s | whole group s | per job of the group ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in starts:
        per_job = 1000 * (s["group"] - s["one"]) / max(s["jobs"] - 1, 1)
        lines.append(
            f"| {s['name']} | {s['cells']} | {s['jobs']} | {s['one']:.1f} | {s['group']:.1f} | {per_job:.2f} |"
        )
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
            start_in_job(tmp, "ten", TEN) | {"name": "10 cells"},
            start_in_job(tmp, "large", LARGE) | {"name": "2,000 cells"},
        ]
    text = table(rounds, starts)
    print(text)
    (REPO / "docs" / "bench-cluster.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
