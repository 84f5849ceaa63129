"""Two Slurm nodes on one machine (the second a slurmd in network and UTS namespaces of its own, see
tools/slurm_local.py): each host's cells land on that host, the all-hosts cell runs on both at once, and with
shared_file both nodes' parts share one file. One campaign serves every assertion (each Slurm job costs ~20 s)."""

import json
import socket

import pandas as pd
import pytest

from conftest import SLURM_PROFILE, held, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]
SIZE = 16 * 2**20
HERE, OTHER = socket.gethostname(), "fsbench-n2"


@pytest.fixture(scope="session")
def campaign(tmp_path_factory):
    """Both hosts, a shared path, file per host and one shared file: (Slurm's job log, workdir, measurements)."""
    base = tmp_path_factory.mktemp("slurm2")
    workdir = tmp_path_factory.mktemp("nodes")
    with slurm_cluster(base, 2) as env, private_scratch() as scratch:
        shared = scratch / "shared"
        shared.mkdir()
        config = {
            "campaign": "nodes",
            "scratch": str(scratch),
            "hosts": [HERE, OTHER],
            "arrays": {"p": {"kind": "path", "path": str(shared), "all_hosts": True}},
            "io": {
                "size": "16MiB",
                "block_sizes": ["1MiB"],
                "repeats": 1,
                "cache": "fadvise",
                "shared_file": [False, True],
            },
        }
        run_campaign(workdir, config, *SLURM_PROFILE, env=env)
        assert list(shared.iterdir()) == [] and not held(scratch)  # every host's data folder is gone again
        jobs = [j for j in (base / "log" / "jobcomp.txt").read_text().splitlines() if f"WorkDir={workdir}" in j]
    return jobs, workdir, pd.read_csv(workdir / "results/nodes/measurements.csv")


def test_each_host_measures_alone_then_all_at_once(campaign):
    jobs, workdir, df = campaign
    df = df[~df.shared_file]
    # the host column is what each job's machine calls itself: the pinned node ran it
    assert sorted(set(df.host)) == sorted([HERE, OTHER, "all", f"{HERE}@all", f"{OTHER}@all"])
    assert all(sorted(ops) == ["read", "write"] for _, ops in df.groupby("host").op)
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        parts = df[df.host.str.endswith("@all") & (df.op == op)]
        assert whole.bytes == 2 * SIZE and (parts.bytes == SIZE).all()
        assert whole.seconds >= parts.seconds.max()  # first start to last end covers each host's own time
        if op == "read":  # io.read_from other, the default with several hosts: each reads the other's files
            folder = (workdir / whole.record).parent / "hosts"
            for h, writer in ((HERE, OTHER), (OTHER, HERE)):
                whose = json.loads((folder / f"{h}-read.json").read_text())["read_from"]
                assert {w["written_by"] for w in whose} == {f"{writer} stream 0"}, whose
        streams = json.loads((workdir / whole.record).read_text())["streams"]
        starts = [s["start"] for s in streams]
        assert len(streams) == 2 and max(starts) - min(starts) < 1.0, starts  # they started together
    nodes = sorted(j.split("NodeList=")[1].split()[0] for j in jobs)
    assert all("JobState=COMPLETED" in j for j in jobs), jobs
    # per host one group job of its steps (prepare_array, then write and read of each shared_file cell, and a
    # release); on both nodes one of the all-hosts prepare_array, its cells' write and read, and release
    both = {f"{HERE},{OTHER}", f"{OTHER},{HERE}"}
    assert sorted("both" if n in both else n for n in nodes) == sorted([HERE, OTHER, "both"]), nodes


def test_an_all_hosts_cell_shares_one_file_between_the_nodes(campaign):
    """shared_file across hosts: both nodes' parts write and read one file on the shared path, each in its own
    slots (this node's stream slot 0 or 1 of 2, by its place in hosts)."""
    _, workdir, df = campaign
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op) & df.shared_file].iloc[0]
        assert whole.bytes == 2 * SIZE
        folder = (workdir / whole.record).parent / "hosts"
        parts = {h: json.loads((folder / f"{h}-{op}.json").read_text()) for h in (HERE, OTHER)}
        # io.read_from other (the default with several hosts): each node reads the other's slots
        bases = {HERE: 0, OTHER: 1} if op == "write" else {HERE: 1, OTHER: 0}
        assert {h: p["cell"]["slot_base"] for h, p in parts.items()} == bases
        paths = {s["path"] for p in parts.values() for s in p["streams"]}
        assert len(paths) == 1 and "/fsbench-nodes-p.all/" in paths.pop()
        assert all("shared: stream s moves blocks s, s+2" in p["command"] for p in parts.values())
