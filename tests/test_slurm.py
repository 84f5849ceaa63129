"""Scale out: the same campaign through a real single-node Slurm (started here, stopped after) gives
results of the same shape as a local run, and every device step went through Slurm."""

import json
import os
import re
import socket
import subprocess
import uuid

import pandas as pd
import pytest

from conftest import REPO, SLURM_PROFILE, held, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    base = tmp_path_factory.mktemp("slurm")
    with slurm_cluster(base) as env:
        yield base, env


def small(scratch, name, host):
    return {
        "campaign": name,
        "scratch": str(scratch),
        "hosts": [host],
        "exclusive": True,
        "arrays": {"demo": {"kind": "loop", "size": "256MiB"}},
        "filesystems": {"ext4": {"type": "ext4"}},
        "io": {"size": "32MiB", "block_sizes": ["1MiB"], "repeats": 1},
    }


@pytest.fixture(scope="module")
def campaign(slurm, tmp_path_factory):
    """One campaign through Slurm serves the assertions below (each Slurm job costs ~20 s): a loop array (raw
    and ext4) and a path array with all_hosts. Returns (its config, workdir, Slurm's job log lines for it)."""
    base, env = slurm
    workdir = tmp_path_factory.mktemp("on-slurm")
    with private_scratch() as scratch:
        shared = scratch / "shared"
        shared.mkdir()
        config = small(scratch, f"sl-{uuid.uuid4().hex[:6]}", socket.gethostname())
        config["arrays"]["p"] = {"kind": "path", "path": str(shared), "all_hosts": True}
        config["io"]["cache"] = "fadvise"
        proc = run_campaign(
            workdir,
            config,
            *SLURM_PROFILE,
            env=env,
        )
        assert "slurm" in proc.stdout + proc.stderr
        assert not held(scratch) and list(shared.iterdir()) == []  # every host's data folder is gone again
    jobs = [j for j in (base / "log" / "jobcomp.txt").read_text().splitlines() if f"WorkDir={workdir}" in j]
    return config, workdir, jobs


def test_campaign_through_slurm_matches_a_local_run(slurm, campaign, tmp_path):
    _, env = slurm
    config, workdir, jobs = campaign
    name, node = config["campaign"], socket.gethostname()
    with private_scratch() as scratch:  # locally, the loop array alone: an all-hosts cell needs Slurm's srun
        local = config | {"scratch": str(scratch), "arrays": {"demo": config["arrays"]["demo"]}}
        run_campaign(tmp_path, local)
        assert not held(scratch)
    on_slurm = pd.read_csv(workdir / f"results/{name}/measurements.csv")
    local = pd.read_csv(tmp_path / f"results/{name}/measurements.csv")
    cell = ["host", "target", "fs_type", "op", "pattern", "block_size", "direct", "streams", "rep", "bytes"]
    assert list(on_slurm.columns) == list(local.columns)
    loop = on_slurm[on_slurm.array == "demo"]
    assert loop[cell].sort_values(cell).values.tolist() == local[cell].sort_values(cell).values.tolist()
    assert len(loop) == 4 and (loop.host == node).all()
    assert (workdir / f"results/{name}/runs/{node}/demo/ext4/seq-1MiB-buffered-1s/rep1/read.json").exists()
    # Slurm's job log: a group job per array and host, all completed on the node, each with the whole node
    # (exclusive: every CPU, though a job asks for one): the loop array's steps (prepare_array; raw: write,
    # read; ext4: mkfs, mount, write, read; release), the path array's for the host, and those for all hosts.
    assert len(jobs) == 3 and all("JobState=COMPLETED" in j and f"NodeList={node} " in j for j in jobs), jobs
    (log,) = (workdir / ".snakemake" / "log").glob("*.snakemake.log")
    groups = re.findall(r"Group job (\S+) \(jobs in", log.read_text())
    assert sorted(groups) == sorted([f"fsbench-{node}-demo", f"fsbench-{node}-p", "fsbench-all-p"]), groups
    cpus = os.cpu_count()
    assert all(f"ProcCnt={cpus} " in j for j in jobs), jobs
    sinfo = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=os.environ | env)
    assert sinfo.stdout.strip() == "idle"


def test_all_hosts_at_once_on_a_shared_path(campaign):
    """A path array with all_hosts: each host's own cells, and the cell all hosts run at once (srun, one
    part per node), whose figure is the total bytes over the common wall time."""
    config, workdir, _ = campaign
    node = socket.gethostname()
    df = pd.read_csv(workdir / f"results/{config['campaign']}/measurements.csv")
    df = df[df.array == "p"]
    assert sorted(df.host) == sorted([node, node, "all", "all", f"{node}@all", f"{node}@all"])
    assert (df.bytes == 32 * 2**20).all()  # one host: the whole is its one part
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        part = df[(df.host == f"{node}@all") & (df.op == op)].iloc[0]
        assert whole.seconds >= part.seconds and whole.seconds_durable >= part.seconds_durable
        record = json.loads((workdir / whole.record).read_text())
        assert record["command"].startswith("srun --overlap --nodes=1 --ntasks=1 --ntasks-per-node=1")


def test_a_cell_is_pinned_to_its_host(slurm, tmp_path):
    """A host Slurm does not know is refused by sbatch: the pin reaches Slurm, nothing runs elsewhere."""
    _, env = slurm
    with private_scratch() as scratch:
        proc = run_campaign(
            tmp_path,
            small(scratch, "pinned", "no-such-node"),
            *SLURM_PROFILE,
            check=False,
            env=env,
        )
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "--nodelist=no-such-node" in said, said[-3000:]
        assert not held(scratch) and not (tmp_path / "results/pinned/runs").exists()


def test_a_loop_array_on_a_cluster_needs_hosts(slurm, tmp_path):
    _, env = slurm
    with private_scratch() as scratch:
        config = small(scratch, "anywhere", "x") | {"hosts": []}
        proc = run_campaign(tmp_path, config, "--profile", str(REPO / "profiles" / "slurm"), check=False, env=env)
        said = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "config key 'hosts': value [] is not allowed with a cluster executor" in said
        assert not held(scratch) and not (tmp_path / "results/anywhere/runs").exists()


def test_a_cell_for_another_host_is_refused_locally(scratch, tmp_path):
    proc = run_campaign(tmp_path, small(scratch, "elsewhere", "no-such-node"), check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"this cell is for host 'no-such-node' but runs on '{socket.gethostname()}'" in said
    assert "--profile profiles/slurm" in said and not held(scratch)
