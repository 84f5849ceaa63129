"""A client-scaling study through Slurm (config clients) on CephFS: four Slurm nodes (tools/slurm_local.py), each with
a ceph-fuse client of its own of one small Ceph cluster (tools/cephfs_local.py), and one campaign: an all-hosts cell
of a path array that stripes its files (arrays.g.layout) and IO500's phases, at 1, 2 and 4 hosts x 1 and 2 processes,
each point a cell of its own whose parts start together at a barrier. Every point's figure from the hosts that ran it
(the block I/O parts' records and each io500 phase's), the layout as CephFS read it back on each host (the block I/O
cells'; io500's phases keep the filesystem's own, docs/cluster.md), scaling.csv's arithmetic, the plot and the page's
section; every Ceph daemon and client within 1 GiB; afterwards nothing of it is left mounted or running. (On these
namespace nodes, one kernel and 2 CPUs, the figures show CPU contention, not storage scaling: the test checks the
workflow and the arithmetic. GlusterFS is tested by tests/test_slurm_shared.py and tests/test_slurm_nodes.py.)"""

import json
import socket
import subprocess
import sys

import pandas as pd
import pytest

from fsbench.io500 import phases as ph

from conftest import (
    IO500_SMALL,
    REPO,
    SLURM_PROFILE,
    cluster_processes,
    needs_root,
    private_scratch,
    run_campaign,
    slurm_cluster,
)

pytestmark = [needs_root, pytest.mark.e2e]
SIZE = 8 * 2**20
HOSTS = [socket.gethostname(), "fsbench-n2", "fsbench-n3", "fsbench-n4"]
CLIENTS = {"hosts": [1, 2, 4], "processes": [1, 2]}
POINTS = [(h, p) for h in CLIENTS["hosts"] for p in CLIENTS["processes"]]
# The path array stripes its files: 64 KiB units over 2 objects of 1 MiB (as in tests/test_slurm_shared.py)
LAYOUT = {"stripe_unit": 64 * 2**10, "stripe_count": 2, "object_size": 2**20}
# IO500's small sizes, its processes per host each point's; a stonewall far beyond them: every write writes all it
# may. ior-rnd4K-easy-read not run (io500's run = FALSE): it reads on to the stonewall, 30 s at each point
IO500 = IO500_SMALL | {"stonewall-time": 30, "ior-rnd4K-easy-read": {"run": False}}
# io500's phases with a figure (all but the timestamp and the one not run): the 12 of its score
PHASES = [p for p in ph.order("standard") if ph.BY_NAME[p].kind != "dummy" and p != "ior-rnd4K-easy-read"]


def test_a_scaling_study_has_every_point_from_the_hosts_that_ran_it(tmp_path):
    base, workdir = tmp_path / "cluster", tmp_path / "work"
    with private_scratch() as scratch:
        shared = scratch / "volume"  # beside the campaign's own folder (scratch/shared), not holding it
        with slurm_cluster(base, len(HOSTS), shared=shared, fs="ceph") as env:
            config = {
                "campaign": "scaling",
                "scratch": str(scratch),
                "hosts": HOSTS,
                "arrays": {"g": {"kind": "path", "path": str(shared), "all_hosts": True, "layout": LAYOUT}},
                "io": {"size": "8MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise"},
                "io500": IO500,
                "clients": CLIENTS,
            }
            run_campaign(workdir, config, *SLURM_PROFILE, env=env)
            volume = [p.name for p in shared.iterdir() if not p.name.startswith(".")]
            sys.path.insert(0, str(REPO / "tools"))
            import cephfs_local

            memory = cephfs_local.memory(base)
        mounts = subprocess.run(["findmnt", "-n", "-t", cephfs_local.FS_TYPE], capture_output=True, text=True).stdout
        left = {"processes": cluster_processes(base), "mounts": mounts.strip(), "volume": volume}
    assert left == {"processes": [], "mounts": "", "volume": []}
    print({name: f"{b / 2**20:.0f} MiB" for name, b in memory.items()})
    clients = sorted(f"client.{'host' if h == HOSTS[0] else h}" for h in HOSTS)
    assert sorted(memory) == sorted([*clients, "mds.a", "mgr.x", "mon.a", "osd.0", "osd.1"]), memory
    assert all(b < 1024 * 2**20 for b in memory.values()), memory
    results = workdir / "results/scaling"
    df = pd.read_csv(results / "scaling.csv")
    tests = ["g write seq 1MiB buffered, file per process", "g read seq 1MiB buffered, file per process"]
    io500_tests = [f"g io500 {phase}" for phase in PHASES]
    assert sorted(set(df.test)) == sorted(tests + io500_tests)
    for test in tests + io500_tests:
        part = df[df.test == test]
        assert [(r.hosts, r.processes) for r in part.itertuples()] == POINTS, test
        assert list(part.clients) == [h * p for h, p in POINTS] and (part.figure > 0).all(), test
        first = part.iloc[0]
        assert list(part.efficiency) == pytest.approx(list(part.figure / part.clients / first.figure))
    measured = pd.read_csv(results / "measurements.csv")
    for h, p in POINTS:
        point, hosts = f"all{h}x{p}", HOSTS[:h]
        for op in ("write", "read"):
            whole = measured[(measured.host == point) & (measured.op == op)]
            assert whole.streams.tolist() == [p] and whole.bytes.tolist() == [h * p * SIZE], (point, op)
            record = workdir / whole.record.iloc[0]
            assert 0 <= json.loads(record.read_text())["hosts"]["start_spread_s"] < 1
            folder = record.parent / "hosts"
            for host in hosts:  # each part's figure from the node that ran it, and no other node's
                part = json.loads((folder / f"{host}-{op}.json").read_text())
                assert part["machine"]["host"] == host
                (info,) = part["setup"]["info"]  # the layout as CephFS read it back from the host's data folder
                assert info["fs_type"] == cephfs_local.FS_TYPE and info["layout"] == LAYOUT | {"pool": "cephfs_data"}
            assert sorted(f.name for f in folder.glob(f"*-{op}.json")) == sorted(f"{x}-{op}.json" for x in hosts)
        for phase in PHASES:  # each io500 phase's figure from the point's hosts, each running its processes
            rec = json.loads((results / "runs" / point / "g/path/io500/rep1" / f"{phase}.json").read_text())
            assert sorted(rec["hosts"]) == sorted(hosts), (point, phase)
            for host, part in rec["hosts"].items():
                assert part["hostname"] == host and len(part["processes"]) == p, (point, phase, host)
            assert rec["value"] > 0 and rec["cell"]["host"] == point, (point, phase)
        rnd = json.loads((results / "runs" / point / "g/path/io500/rep1/ior-rnd4K-easy-read.json").read_text())
        assert (rnd["run"], rnd["value"], rnd["hosts"], rnd["valid"]) == (False, 0, {}, False), point
    assert (results / "plots/scaling.png").stat().st_size > 0
    assert "Client scaling" in (results / "summary.html").read_text()
