"""Two Slurm nodes on one machine (the second a slurmd in network and UTS namespaces of its own, see
tools/slurm_local.py): each host's cells land on that host, and the all-hosts cell runs on both at once."""

import json
import socket

import pandas as pd
import pytest

from conftest import REPO, held, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]
SIZE = 32 * 2**20


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    base = tmp_path_factory.mktemp("slurm2")
    with slurm_cluster(base, 2) as env:
        yield base, env


def test_each_host_measures_alone_then_all_at_once(two_nodes, tmp_path):
    base, env = two_nodes
    here, other = socket.gethostname(), "fsbench-n2"
    with private_scratch() as scratch:
        shared = scratch / "shared"
        shared.mkdir()
        config = {
            "campaign": "nodes",
            "scratch": str(scratch),
            "hosts": [here, other],
            "arrays": {"p": {"kind": "path", "path": str(shared), "all_hosts": True}},
            "io": {"size": "32MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise"},
        }
        run_campaign(
            tmp_path,
            config,
            "--profile",
            str(REPO / "profiles" / "slurm"),
            "--seconds-between-status-checks",
            "2",
            env=env,
        )
        assert list(shared.iterdir()) == [] and not held(scratch)
    df = pd.read_csv(tmp_path / "results/nodes/measurements.csv")
    # the host column is what each job's machine calls itself: the pinned node ran it
    assert sorted(set(df.host)) == sorted([here, other, "all", f"{here}@all", f"{other}@all"])
    assert all(sorted(ops) == ["read", "write"] for _, ops in df.groupby("host").op)
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        parts = df[df.host.str.endswith("@all") & (df.op == op)]
        assert whole.bytes == 2 * SIZE and (parts.bytes == SIZE).all()
        assert whole.seconds >= parts.seconds.max()  # first start to last end covers each host's own time
        streams = json.loads((tmp_path / whole.record).read_text())["streams"]
        starts = [s["start"] for s in streams]
        assert len(streams) == 2 and max(starts) - min(starts) < 1.0, starts  # they started together
    jobs = [j for j in (base / "log" / "jobcomp.txt").read_text().splitlines() if f"WorkDir={tmp_path}" in j]
    nodes = sorted(j.split("NodeList=")[1].split()[0] for j in jobs)
    assert all("JobState=COMPLETED" in j for j in jobs), jobs
    # per host its steps (prepare_array, write, read) and a release; the all-hosts cell's steps on both nodes
    both = {f"{here},{other}", f"{other},{here}"}
    assert sorted("both" if n in both else n for n in nodes) == sorted([here] * 4 + [other] * 4 + ["both"] * 3), nodes


def test_an_all_hosts_cell_shares_one_file_between_the_nodes(two_nodes, tmp_path):
    """shared_file across hosts: both nodes' parts write and read one file on the shared path, each in its own
    slots (this node's stream slot 0 or 1 of 2, by its place in hosts), and the shared folder is empty after."""
    base, env = two_nodes
    here, other = socket.gethostname(), "fsbench-n2"
    with private_scratch() as scratch:
        shared = scratch / "shared"
        shared.mkdir()
        config = {
            "campaign": "nodes-shared",
            "scratch": str(scratch),
            "hosts": [here, other],
            "arrays": {"p": {"kind": "path", "path": str(shared), "all_hosts": True}},
            "io": {"size": "16MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise", "shared_file": [True]},
        }
        profile = ["--profile", str(REPO / "profiles" / "slurm"), "--seconds-between-status-checks", "2"]
        run_campaign(tmp_path, config, *profile, env=env)
        assert list(shared.iterdir()) == [] and not held(scratch)
    df = pd.read_csv(tmp_path / "results/nodes-shared/measurements.csv")
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        assert whole.bytes == 2 * 16 * 2**20 and bool(whole.shared_file)
        folder = (tmp_path / whole.record).parent / "hosts"
        parts = {h: json.loads((folder / f"{h}-{op}.json").read_text()) for h in (here, other)}
        assert {h: p["cell"]["slot_base"] for h, p in parts.items()} == {here: 0, other: 1}
        paths = {s["path"] for p in parts.values() for s in p["streams"]}
        assert len(paths) == 1 and "/fsbench-nodes-shared-p.all/" in paths.pop()
        assert all("shared: stream s moves blocks s, s+2" in p["command"] for p in parts.values())
