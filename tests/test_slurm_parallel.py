"""Two Slurm nodes, each measuring loop arrays of its own (tools/slurm_local.py; the second node a slurmd in
namespaces of its own): each host's device steps of an array are one group job on its node, the hosts measure at
the same time while no two device steps of one host ever overlap, `hosts_parallel: false` makes them take turns,
and a cancelled or killed group job is released at once and finished by the same command. Overlap is read from
the steps' own records: when each step began and ended, its set-up included (step_started_at, step_ended_at)."""

import json
import os
import re
import signal
import socket
import subprocess
import time
from contextlib import suppress
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, SLURM_PROFILE, SNAKEMAKE, held, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]
HERE, OTHER = socket.gethostname(), "fsbench-n2"


@pytest.fixture(scope="module")
def slurm2(tmp_path_factory):
    base = tmp_path_factory.mktemp("slurm2")
    with slurm_cluster(base, 2) as env:
        yield base, env


def two_hosts(scratch, name, **over) -> dict:
    return {
        "campaign": name,
        "scratch": str(scratch),
        "hosts": [HERE, OTHER],
        "arrays": {"demo": {"kind": "loop", "size": "256MiB"}},
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {"size": "64MiB", "block_sizes": ["1MiB"], "repeats": 2},
    } | over


def spans(results: Path) -> dict[str, list[tuple[float, float, str]]]:
    """Per host, when each of its device steps ran (start, end, record), from the span each step's record gives
    (fsbench.toolkit.run_step.run_device_step): the whole step, not only what it measured. Every record under runs/
    is a device step's, and must have it."""
    found: dict[str, list] = {}
    for path in (results / "runs").rglob("*.json"):
        record = json.loads(path.read_text())
        start, end = (datetime.fromisoformat(record[k]).timestamp() for k in ("step_started_at", "step_ended_at"))
        assert start <= end, path
        host = path.relative_to(results / "runs").parts[0]
        found.setdefault(host, []).append((start, end, str(path.relative_to(results))))
    return {host: sorted(s) for host, s in found.items()}


def overlapping(steps) -> list:
    steps = sorted(steps)
    return [(a, b) for a, b in zip(steps, steps[1:], strict=False) if b[0] < a[1]]


def slurm_jobs(base: Path, workdir: Path) -> list[str]:
    return [j for j in (base / "log" / "jobcomp.txt").read_text().splitlines() if f"WorkDir={workdir} " in j]


def test_hosts_with_their_own_arrays_measure_at_once_one_step_at_a_time_each(slurm2, tmp_path):
    base, env = slurm2
    arrays = {"demo": {"kind": "loop", "size": "256MiB"}, "more": {"kind": "loop", "size": "256MiB"}}
    with private_scratch() as scratch:
        run = run_campaign(tmp_path, two_hosts(scratch, "together", arrays=arrays), *SLURM_PROFILE, env=env)
        assert not held(scratch)
    results = tmp_path / "results/together"
    df = pd.read_csv(results / "measurements.csv")
    assert sorted(set(df.host)) == sorted([HERE, OTHER]) and len(df) == 2 * 2 * 2 * 2 * 2
    # one Slurm job per host and array, run on that host: Snakemake names each job's group as it submits it
    # (its log folder, group_fsbench-{host}-{array}_<its rules>), Slurm's job log says where the job ran
    said = run.stdout + run.stderr
    folders = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/group_([^/\s]+)/", said))
    jobs = slurm_jobs(base, tmp_path)
    ran = {j.split("JobId=")[1].split()[0]: j.split("NodeList=")[1].split()[0] for j in jobs}
    assert sorted(folders) == sorted(ran), (folders, jobs)
    expected = sorted(f"fsbench-{host}-{array}" for host in (HERE, OTHER) for array in arrays)
    group_of = {job: [g for g in expected if folder.startswith(f"{g}_")] for job, folder in folders.items()}
    assert sorted(g for found in group_of.values() for g in found) == expected, folders  # each host and array once
    group_of = {job: found[0] for job, found in group_of.items()}
    assert all(group.startswith(f"fsbench-{ran[job]}-") for job, group in group_of.items()), (group_of, ran)
    assert all("JobState=COMPLETED" in j for j in jobs), jobs
    steps = spans(results)
    # per array prepare_array, per rep raw 2 steps and ext4 4
    assert all(len(s) == 2 * (1 + 2 * (2 + 4)) for s in steps.values()), steps
    for host, s in steps.items():
        assert not overlapping(s), (host, overlapping(s))
    writes = {h: [x for x in s if x[2].endswith("/write.json")] for h, s in steps.items()}
    (a0, a1), (b0, b1) = ((w[0][0], max(x[1] for x in w)) for w in writes.values())
    assert a0 < b1 and b0 < a1, writes  # each host's writes, first start to last end, overlap the other's


def test_hosts_parallel_false_makes_the_hosts_take_turns(slurm2, tmp_path):
    base, env = slurm2
    with private_scratch() as scratch:
        run_campaign(tmp_path, two_hosts(scratch, "in-turn", hosts_parallel=False), *SLURM_PROFILE, env=env)
        assert not held(scratch)
    steps = spans(tmp_path / "results/in-turn")
    assert sorted(steps) == sorted([HERE, OTHER])
    assert not overlapping([x for s in steps.values() for x in s])  # no step of one host beside one of the other
    jobs = slurm_jobs(base, tmp_path)
    assert len(jobs) == 2 and all("JobState=COMPLETED" in j for j in jobs), jobs


def job_on(node: str, env: dict) -> str:
    squeue = subprocess.run(["squeue", "-h", "-o", "%i %N"], capture_output=True, text=True, env=os.environ | env)
    return next(line.split()[0] for line in squeue.stdout.splitlines() if line.split()[1:] == [node])


def kill_processes_of(job: str) -> list[int]:
    """SIGKILL every process of Slurm job `job` (as a node dying would end them), not the Slurm daemons."""
    killed = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            comm = (proc / "comm").read_text().strip()
        except OSError:
            continue
        if f"SLURM_JOB_ID={job}".encode() in environ and comm != "slurmstepd":
            with suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)
                killed.append(int(proc.name))
    return killed


def interrupted_run(workdir: Path, config: dict, env: dict, scratch: Path, host: str, stop) -> subprocess.Popen:
    """Start the campaign through Slurm, wait until `host` writes (its data file exists), `stop` its group job,
    and wait for the run to end."""
    cfg = workdir / "campaign.yaml"
    cfg.write_text(yaml.safe_dump(config))
    argv = [str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "--cores", "2", *SLURM_PROFILE, "--configfile", str(cfg)]
    log = workdir / f"run-{host}.log"
    with log.open("w") as out:
        run = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=os.environ | env)
    try:
        folder = scratch / config["campaign"] / f"demo.{host}"
        deadline = time.monotonic() + 600
        while not list(folder.rglob("fsbench-*.dat")):
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        stop(job_on(host, env))
        run.wait(timeout=900)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run, log.read_text()


def test_a_cancelled_or_killed_group_job_is_released_and_the_same_command_finishes(slurm2, tmp_path):
    _, env = slurm2
    with private_scratch() as scratch:
        config = two_hosts(scratch, "recovers", io={"size": "128MiB", "block_sizes": ["1MiB"], "repeats": 2})
        results = tmp_path / "results/recovers"

        def scancel(job):
            subprocess.run(["scancel", job], check=True, env=os.environ | env)

        # the other node's group job cancelled mid-write: the run ends, this host's cells all done, and releases
        # that node through Slurm (its own release step never ran)
        run, said = interrupted_run(tmp_path, config, env, scratch, OTHER, scancel)
        assert run.returncode != 0 and f"fsbench: release on {OTHER}: " in said and not held(scratch), said[-3000:]
        assert len(list((results / "runs" / HERE).rglob("write.json"))) == 4
        # then, in the same command again, its job's processes killed mid-write, as when a node dies
        run, said = interrupted_run(tmp_path, config, env, scratch, OTHER, kill_processes_of)
        assert run.returncode != 0 and f"fsbench: release on {OTHER}: " in said and not held(scratch), said[-3000:]
        done = run_campaign(tmp_path, config, *SLURM_PROFILE, env=env)
        assert not held(scratch)
    df = pd.read_csv(results / "measurements.csv")
    cell = ["host", "target", "op", "rep"]
    assert len(df) == 2 * 2 * 2 * 2 and not df.duplicated(cell).any()
    assert (df.bytes == 128 * 2**20).all()
    assert "Nothing to be done" not in done.stdout + done.stderr
    for host, s in spans(results).items():
        assert not overlapping(s), (host, overlapping(s))


def test_adaptive_repeats_through_slurm_round_by_round(slurm2, tmp_path):
    """The decisions between rounds (a checkpoint) run where Snakemake runs: the first rounds are one group job,
    each cell's next repeat comes in a later one, and the release is a job of its own."""
    base, env = slurm2
    repeats = {"min": 2, "max": 3, "target_ci": 0.000001}  # no cell gets this close: every one takes 3
    with private_scratch() as scratch:
        config = two_hosts(scratch, "rounds", hosts=[HERE])
        config["io"] = {"size": "32MiB", "block_sizes": ["1MiB"], "repeats": repeats}
        run_campaign(tmp_path, config, *SLURM_PROFILE, env=env)
        assert not held(scratch)
    df = pd.read_csv(tmp_path / "results/rounds/measurements.csv")
    assert len(df) == 2 * 2 * 3 and not df.duplicated(["target", "op", "rep"]).any()
    (steps,) = spans(tmp_path / "results/rounds").values()
    assert not overlapping(steps)
    jobs = slurm_jobs(base, tmp_path)
    # reps 1 and 2 with prepare_array; rep 3 of each cell, a job each as its decision comes; the release
    assert len(jobs) == 4 and all("JobState=COMPLETED" in j for j in jobs), jobs
