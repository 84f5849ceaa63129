"""Four Slurm nodes sharing one real filesystem: a GlusterFS volume (tools/slurm_local.py) that this host and nodes
2-4 each mount at the same path through a FUSE client of their own (each extra node's in its own network and mount
namespaces). One campaign on it from every host at once: an all-hosts cell of a path array, and IO500's phases with
4 hosts x 2 processes, each host reading what another wrote, the parts of each started together at a barrier;
afterwards nothing of it is left mounted or running."""

import json
import math
import os
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import IO500_SMALL, SLURM_PROFILE, needs_root, private_scratch, run_campaign, slurm_cluster

pytestmark = [needs_root, pytest.mark.e2e]
SIZE = 8 * 2**20
HERE = socket.gethostname()
HOSTS = [HERE, "fsbench-n2", "fsbench-n3", "fsbench-n4"]
OTHER = HOSTS[-1]
SOURCE = "10.231.0.1:/fsbench"  # slurm_local's volume, served on the veth
IO500 = IO500_SMALL | {"stonewall-time": 30}  # far beyond them: every write phase writes all it may
PHASES = ["ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find", "ior-easy-read"]
PHASES += ["mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete", "mdtest-hard-read"]
PHASES += ["mdtest-hard-delete"]
CLIENTS = {"hosts": [1, 2, 4], "processes": [1, 2]}
POINTS = [(h, p) for h in CLIENTS["hosts"] for p in CLIENTS["processes"]]


def gluster_processes(base: Path) -> list[str]:
    """Every process whose command line names this cluster's folder (glusterd, brick, clients)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(base) in argv and "gluster" in argv:
            found.append(argv.replace("\0", " "))
    return found


@pytest.fixture(scope="session")
def campaign(tmp_path_factory):
    """(workdir, measurements, what each host's job saw of the mount, what was left afterwards)."""
    base = tmp_path_factory.mktemp("slurm-shared")
    workdir = tmp_path_factory.mktemp("shared")
    with private_scratch() as scratch:
        shared = scratch / "volume"  # beside the campaign's own folder (scratch/shared), not holding it
        with slurm_cluster(base, len(HOSTS), shared=shared) as env:
            # What a job on each node sees at the path: its own client's mount of the volume.
            seen = {}
            for node in HOSTS:
                argv = ["srun", "-w", node, "findmnt", "-n", "-o", "FSTYPE,SOURCE", "--mountpoint", str(shared)]
                seen[node] = subprocess.run(
                    argv, capture_output=True, text=True, env=os.environ | env, timeout=60
                ).stdout.split()
            # A file node 4's job writes lands in the brick, and this host reads it through its own client.
            argv = ["srun", "-w", OTHER, "dd", "if=/dev/urandom", f"of={shared}/marker", "bs=4096", "count=1"]
            subprocess.run(argv, capture_output=True, env=os.environ | env, timeout=60, check=True)
            seen["brick"] = (base / "gluster/brick/marker").read_bytes() == (shared / "marker").read_bytes()
            (shared / "marker").unlink()
            config = {
                "campaign": "shared",
                "scratch": str(scratch),
                "hosts": HOSTS,
                "arrays": {"g": {"kind": "path", "path": str(shared), "all_hosts": True}},
                "io": {"size": "8MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise"},
                "io500": IO500,
            }
            run_campaign(workdir, config, *SLURM_PROFILE, env=env)
            # a scaling study on it: 1, 2, 4 hosts x 1, 2 processes, all-hosts cells and io500
            scaling = config | {"campaign": "scaling", "clients": CLIENTS}
            run_campaign(workdir, scaling, *SLURM_PROFILE, env=env)
            brick = list((base / "gluster" / "brick").iterdir())
        mounts = subprocess.run(["findmnt", "-n", "-t", "fuse.glusterfs"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
        left = {
            "processes": gluster_processes(base),
            "mounts": mounts.strip(),
            "namespaces": subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.strip(),
            "veth": links.count("fsbv") + links.count("fsbbr"),  # the nodes' veths and their bridge
            "brick": [p.name for p in brick if not p.name.startswith(".")],
        }
    return workdir / "results/shared", pd.read_csv(workdir / "results/shared/measurements.csv"), seen, left


def test_every_host_measures_at_once_on_the_shared_filesystem(campaign):
    workdir, df, seen, _ = campaign
    assert seen == {host: ["fuse.glusterfs", SOURCE] for host in HOSTS} | {"brick": True}
    assert {f"{host}@all" for host in HOSTS} | {"all"} <= set(df.host)
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        assert whole.bytes == len(HOSTS) * SIZE and whole.mb_s > 0
        parts = df[df.host.str.endswith("@all") & (df.op == op)]
        assert sorted(parts.host) == sorted(f"{host}@all" for host in HOSTS) and (parts.bytes == SIZE).all()
        cell = json.loads((workdir / Path(whole.record).relative_to("results/shared")).read_text())
        # the parts started together at the barrier: the record says how far apart their first streams started
        assert 0 <= cell["hosts"]["start_spread_s"] < 1, cell["hosts"]["start_spread_s"]
        folder = workdir / Path(whole.record).relative_to("results/shared").parent / "hosts"
        for i, host in enumerate(HOSTS):
            part = json.loads((folder / f"{host}-{op}.json").read_text())
            assert part["machine"]["host"] == host
            # a host writes its file in its folder on the shared mount, as its own job found that mount, and reads
            # the next host's (io.read_from: other, the default with hosts): through its own client, unseen before
            other = HOSTS[(i + 1) % len(HOSTS)]
            (stream,) = part["streams"]
            whose = host if op == "write" else other
            assert stream["path"].startswith(f"{shared_path(workdir)}/fsbench-shared-g.all-{whose}/")
            assert stream["bytes"] == SIZE
            if op == "read":
                assert [r["written_by"] for r in part["read_from"]] == [f"{other} stream 0"]
            array = json.loads((workdir / "runs" / host / "g" / "array.json").read_text())
            assert array["machine"]["host"] == host
            assert array["state"]["info"] == [
                {"fs_type": "fuse.glusterfs", "path": shared_path(workdir), "source": SOURCE}
            ]


def shared_path(results: Path) -> str:
    return json.loads((results / "runs/all/g/array.json").read_text())["spec"]["path"]


def test_every_io500_phase_has_every_host_and_reads_came_from_another(campaign):
    workdir, *_ = campaign
    df = pd.read_csv(workdir / "io500.csv", keep_default_na=False)
    assert list(df.phase) == [*PHASES, "bw", "md", "score"]
    v = df.set_index("phase")["value"].astype(float)
    assert (v > 0).all() and round(v["score"], 4) == round(math.sqrt(v["bw"] * v["md"]), 4)
    made = {}
    for phase in PHASES:
        rec = json.loads((workdir / "runs/all/g/path/io500/rep1" / f"{phase}.json").read_text())
        assert sorted(rec["hosts"]) == sorted(HOSTS), phase
        assert 0 <= rec["start_spread_s"] < 1, (phase, rec["start_spread_s"])
        for host, part in rec["hosts"].items():
            assert part["hostname"] == host  # the part ran on that node, through its own client
            procs = part["processes"]
            assert len(procs) == 2 and all(q["items"] > 0 for q in procs), (phase, host, procs)
            if phase.endswith("write"):
                made[(phase, host)] = sum(q["items"] for q in procs)
            elif phase != "find":  # every read, stat and delete was of what another host's process made
                assert len({q["of_host"] for q in procs} - {host}) == 1, (phase, host, procs)
                assert host not in {q["of_host"] for q in procs}, (phase, host, procs)
                assert all(q["items"] == q2["items"] for q in procs for q2 in procs)
    reasons = df.set_index("phase")["invalid_reasons"]
    for write, read in [("ior-easy-write", "ior-easy-read"), ("ior-hard-write", "ior-hard-read")]:
        assert "cached" not in reasons[read]  # cold: a host's own client never held the other host's data
        assert len({made[(write, host)] for host in HOSTS}) == 1 and made[(write, HERE)] > 0
    find = json.loads((workdir / "runs/all/g/path/io500/rep1/find.json").read_text())
    # every name every host's processes made, seen through the shared filesystem: the mdtest files, ior-easy's file
    # per process and ior-hard's one file (IO500's find looks at ior's files too)
    assert find["amount"] == len(HOSTS) * 2 * (20 + 15 + 1) + 1 and find["valid"]


def test_nothing_is_left_mounted_or_running(campaign):
    *_, left = campaign
    assert left == {"processes": [], "mounts": "", "namespaces": "", "veth": 0, "brick": []}


def test_a_scaling_study_has_every_point_from_the_hosts_that_ran_it(campaign):
    workdir, *_ = campaign
    results = workdir.parent / "scaling"
    df = pd.read_csv(results / "scaling.csv")
    tests = ["g write seq 1MiB buffered, file per process", "g read seq 1MiB buffered, file per process"]
    tests += [f"g io500 {phase}" for phase in PHASES]
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
            folder = workdir.parent / Path(whole.record.iloc[0]).relative_to("results").parent / "hosts"
            for host in hosts:  # each part's figure from the node that ran it, and no other node's
                assert json.loads((folder / f"{host}-{op}.json").read_text())["machine"]["host"] == host
            assert sorted(f.name for f in folder.glob(f"*-{op}.json")) == sorted(f"{x}-{op}.json" for x in hosts)
        rec = json.loads((results / f"runs/{point}/g/path/io500/rep1/ior-easy-write.json").read_text())
        assert sorted(rec["hosts"]) == sorted(hosts)
        assert all(len(part["processes"]) == p for part in rec["hosts"].values())
    assert (results / "plots/scaling.png").stat().st_size > 0
    assert "Client scaling" in (results / "summary.html").read_text()
