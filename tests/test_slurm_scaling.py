"""A client-scaling study through Slurm (config clients): four Slurm nodes (tools/slurm_local.py) sharing a GlusterFS
volume, an all-hosts cell of a path array at 1, 2 and 4 hosts x 1 and 2 processes, each point a cell of its own whose
parts start together at a barrier; every point's figure from the hosts that ran it, scaling.csv's arithmetic, the
plot and the page's section. (On these namespace nodes, one kernel and 2 CPUs, the figures show CPU contention, not
storage scaling: the test checks the workflow and the arithmetic. IO500's points are checked locally in
tests/test_scaling.py.)"""

import json
import socket
from pathlib import Path

import pandas as pd
import pytest

from conftest import SLURM_PROFILE, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]
SIZE = 8 * 2**20
HOSTS = [socket.gethostname(), "fsbench-n2", "fsbench-n3", "fsbench-n4"]
CLIENTS = {"hosts": [1, 2, 4], "processes": [1, 2]}
POINTS = [(h, p) for h in CLIENTS["hosts"] for p in CLIENTS["processes"]]


def test_a_scaling_study_has_every_point_from_the_hosts_that_ran_it(tmp_path):
    base, workdir = tmp_path / "cluster", tmp_path / "work"
    with private_scratch() as scratch:
        shared = scratch / "shared"
        shared.mkdir()
        with slurm_cluster(base, len(HOSTS), shared=shared) as env:
            config = {
                "campaign": "scaling",
                "scratch": str(scratch),
                "hosts": HOSTS,
                "arrays": {"g": {"kind": "path", "path": str(shared), "all_hosts": True}},
                "io": {"size": "8MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise"},
                "clients": CLIENTS,
            }
            run_campaign(workdir, config, *SLURM_PROFILE, env=env)
    results = workdir / "results/scaling"
    df = pd.read_csv(results / "scaling.csv")
    tests = ["g write seq 1MiB buffered, file per process", "g read seq 1MiB buffered, file per process"]
    assert list(dict.fromkeys(df.test)) == tests
    for test in tests:
        part = df[df.test == test]
        assert [(r.hosts, r.processes) for r in part.itertuples()] == POINTS, test
        assert list(part.clients) == [h * p for h, p in POINTS] and (part.figure > 0).all()
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
                assert json.loads((folder / f"{host}-{op}.json").read_text())["machine"]["host"] == host
            assert sorted(f.name for f in folder.glob(f"*-{op}.json")) == sorted(f"{x}-{op}.json" for x in hosts)
    assert (results / "plots/scaling.png").stat().st_size > 0
    assert "Client scaling" in (results / "summary.html").read_text()
    assert Path(results / "scaling.csv").exists()
