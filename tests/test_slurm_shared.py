"""Two Slurm nodes sharing one real filesystem (tools/slurm_local.py), a GlusterFS volume and then a CephFS (mon, mgr,
2 OSDs, MDS: tools/cephfs_local.py), that this host and node 2 each mount at the same path through a FUSE client of
their own (node 2's in its own network and mount namespaces). One campaign on each from both hosts at once: an
all-hosts cell of a path array, and IO500's phases with 2 hosts x 2 processes, each host reading what the other
wrote; afterwards nothing of it is left mounted or running. `-k ceph` runs only CephFS's."""

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fsbench.io500.phases import read_shift
from fsbench.storage import client_cache

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
HERE, OTHER = socket.gethostname(), "fsbench-n2"
# What findmnt says of each filesystem's mount: its type and source (slurm_local's GlusterFS volume is served on
# the veth; ceph-fuse names itself)
MOUNT = {"glusterfs": ("fuse.glusterfs", "10.231.0.1:/fsbench"), "ceph": ("fuse.ceph-fuse", "ceph-fuse")}
# On CephFS the path array stripes its files: 64 KiB units over 2 objects of 1 MiB (an 8 MiB file in 8 objects)
LAYOUT = {"stripe_unit": 64 * 2**10, "stripe_count": 2, "object_size": 2**20}
IO500 = IO500_SMALL | {"stonewall-time": 30}  # far beyond them: every write phase writes all it may
# io500's standard run order (src/phase-definitions.h), written out here
PHASES = ["ior-easy-write", "mdtest-easy-write", "timestamp", "ior-hard-write", "mdtest-hard-write", "find"]
PHASES += ["ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete"]
PHASES += ["mdtest-hard-read", "mdtest-hard-delete", "ior-rnd4K-easy-read"]


def stored(base: Path, fs: str, marker: Path) -> bytes | None:
    """What the servers hold of `marker`, read past every client: the GlusterFS brick's copy, or for CephFS its one
    RADOS object in the data pool (`rados get`: its name is the file's inode number in hex, then its index)."""
    if fs == "glusterfs":
        return (base / "gluster/brick" / marker.name).read_bytes()
    out, rados = base / "marker.object", ["rados", "-c", str(base / "ceph/ceph.conf"), "-p", "cephfs_data"]
    subprocess.run([*rados, "get", f"{marker.stat().st_ino:x}.00000000", str(out)], capture_output=True, check=True)
    return out.read_bytes()


@pytest.fixture(scope="session", params=["glusterfs", "ceph"])
def campaign(request, tmp_path_factory):
    """(workdir, measurements, what each host's job saw of the mount, what was left afterwards, the filesystem)."""
    fs = request.param
    base = tmp_path_factory.mktemp(f"slurm-{fs}")
    workdir = tmp_path_factory.mktemp(fs)
    with private_scratch() as scratch:
        shared = scratch / "volume"  # beside the campaign's own folder (scratch/shared), not holding it
        with slurm_cluster(base, 2, shared=shared, fs=fs) as env:
            # What a job on each node sees at the path: its own client's mount of the volume.
            seen = {}
            for node in (HERE, OTHER):
                argv = ["srun", "-w", node, "findmnt", "-n", "-o", "FSTYPE,SOURCE", "--mountpoint", str(shared)]
                seen[node] = subprocess.run(
                    argv, capture_output=True, text=True, env=os.environ | env, timeout=60
                ).stdout.split()
            # A file node 2's job writes lands on the servers, and this host reads it through its own client.
            argv = ["srun", "-w", OTHER, "dd", "if=/dev/urandom", f"of={shared}/marker", "bs=4096", "count=1"]
            subprocess.run(argv, capture_output=True, env=os.environ | env, timeout=60, check=True)
            seen["stored"] = stored(base, fs, shared / "marker") == (shared / "marker").read_bytes()
            (shared / "marker").unlink()
            if fs == "ceph":
                seen["client_cache"] = client_caches(base, scratch)
            config = {
                "campaign": "shared",
                "scratch": str(scratch),
                "hosts": [HERE, OTHER],
                "arrays": {"g": {"kind": "path", "path": str(shared), "all_hosts": True}},
                "io": {"size": "8MiB", "block_sizes": ["1MiB"], "repeats": 1, "cache": "fadvise", "verify": True},
                "io500": IO500,
            }
            if fs == "ceph":
                config["arrays"]["g"]["layout"] = LAYOUT
            run_campaign(workdir, config, *SLURM_PROFILE, env=env)
            volume = list(shared.iterdir())
            if fs == "ceph":
                sys.path.insert(0, str(REPO / "tools"))
                import cephfs_local

                seen["memory"] = cephfs_local.memory(base)
        mounts = subprocess.run(["findmnt", "-n", "-t", MOUNT[fs][0]], capture_output=True, text=True).stdout
        left = {
            "processes": cluster_processes(base),
            "mounts": mounts.strip(),
            "namespaces": subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.strip(),
            "veth": subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout.count("fsbv"),
            "volume": [p.name for p in volume if not p.name.startswith(".")],
        }
    return workdir / "results/shared", pd.read_csv(workdir / "results/shared/measurements.csv"), seen, left, fs


def test_both_hosts_measure_at_once_on_the_shared_filesystem(campaign):
    workdir, df, seen, _, fs = campaign
    mount = list(MOUNT[fs])
    assert {k: seen[k] for k in (HERE, OTHER, "stored")} == {HERE: mount, OTHER: mount, "stored": True}
    assert {f"{HERE}@all", f"{OTHER}@all", "all"} <= set(df.host)
    for op in ("write", "read"):
        whole = df[(df.host == "all") & (df.op == op)].iloc[0]
        assert whole.bytes == 2 * SIZE and whole.mb_s > 0
        assert whole.bad_blocks == 0 if op == "read" else math.isnan(whole.bad_blocks)  # both hosts' checks
        parts = df[df.host.str.endswith("@all") & (df.op == op)]
        assert sorted(parts.host) == sorted([f"{HERE}@all", f"{OTHER}@all"]) and (parts.bytes == SIZE).all()
        cell = json.loads((workdir / Path(whole.record).relative_to("results/shared")).read_text())
        # the parts started together at the barrier: the record says how far apart their first streams started
        assert 0 <= cell["hosts"]["start_spread_s"] < 1, cell["hosts"]["start_spread_s"]
        folder = workdir / Path(whole.record).relative_to("results/shared").parent / "hosts"
        for host in (HERE, OTHER):
            part = json.loads((folder / f"{host}-{op}.json").read_text())
            assert part["machine"]["host"] == host
            # a host writes its file in its folder on the shared mount, as its own job found that mount, and reads
            # the other host's (io.read_from: other, the default with hosts): through its own client, unseen before
            other = OTHER if host == HERE else HERE
            (stream,) = part["streams"]
            whose = host if op == "write" else other
            assert stream["path"].startswith(f"{shared_path(workdir)}/fsbench-shared-g.all-{whose}/")
            assert stream["bytes"] == SIZE
            (info,) = part["setup"]["info"]
            if fs == "ceph":  # the layout as CephFS read it back from the host's data folder, before the write
                assert info["layout"] == LAYOUT | {"pool": "cephfs_data"}
            else:
                assert "layout" not in info
            if op == "read":
                assert [r["written_by"] for r in part["read_from"]] == [f"{other} stream 0"]
                # io.verify: every block checked against what the other host's write record says it stamped (each
                # host drew signatures of its own), and found as written
                theirs = json.loads((folder / f"{other}-write.json").read_text())["verify"]["signatures"]
                mine = json.loads((folder / f"{host}-write.json").read_text())["verify"]["signatures"]
                assert theirs != mine and "checked" in part["command"]
                assert part["row"]["bad_blocks"] == 0 and part["row"]["verify_seconds"] > 0
                assert "corrupt" not in part["row"]["flags"]
            array = json.loads((workdir / "runs" / host / "g" / "array.json").read_text())
            assert array["machine"]["host"] == host
            assert array["state"]["info"] == [{"fs_type": mount[0], "path": shared_path(workdir), "source": mount[1]}]
        assert set(df[df.host.str.endswith("@all")].fs_type) == {mount[0]}


def client_caches(base: Path, scratch: Path) -> dict:
    """What fsbench asks ceph-fuse of its object cache: of this host's client (client_oc off, as the test cluster
    mounts it), and of one more client mounted with it on; and of GlusterFS's client (no cache of its own)."""
    found = {"host": client_cache.state(MOUNT["ceph"][0], str(scratch / "volume"))}
    extra = scratch / "cached"
    extra.mkdir()
    argv = ["ceph-fuse", "-c", str(base / "ceph/ceph.conf"), "--id", "cached", "--client_oc=true", str(extra)]
    subprocess.run(argv, capture_output=True, check=True, timeout=60)
    try:
        found["cached"] = client_cache.state(MOUNT["ceph"][0], str(extra))
    finally:
        subprocess.run(["umount", str(extra)], check=True)
    found["glusterfs"] = client_cache.state("fuse.glusterfs", str(scratch))
    return found


def test_a_read_says_what_ceph_fuse_caches_of_its_data(campaign):
    """ceph-fuse's object cache (client_oc) is out of reach of drop_caches and mincore: each read part records
    what its own client said of it, asked through the client's admin socket; a same-host read with it on is
    flagged client-cache (tests/test_client_cache.py), one of the other host's data is not."""
    workdir, df, seen, _, fs = campaign
    if fs != "ceph":
        assert "client_cache" not in seen
        for part in (workdir / "runs/all/g/path").glob("seq-*/rep1/hosts/*-read.json"):
            assert "client_cache" not in json.loads(part.read_text())
        return
    host, cached = seen["client_cache"]["host"], seen["client_cache"]["cached"]
    assert host["client_oc"] is False and host["admin_socket"].endswith("client.host.asok")
    assert cached["client_oc"] is True and cached["admin_socket"].endswith("client.cached.asok")
    assert seen["client_cache"]["glusterfs"] is None
    parts = sorted((workdir / "runs/all/g/path").glob("seq-*/rep1/hosts/*-read.json"))
    assert len(parts) == 2
    for path in parts:  # each host's part asked its own client (node 2's in its own namespaces)
        part = json.loads(path.read_text())
        name = "host" if part["machine"]["host"] == HERE else OTHER
        assert part["client_cache"]["client_oc"] is False, part["client_cache"]
        assert part["client_cache"]["admin_socket"].endswith(f"client.{name}.asok")
        assert "client-cache" not in part["row"]["flags"]


def shared_path(results: Path) -> str:
    return json.loads((results / "runs/all/g/array.json").read_text())["spec"]["path"]


def test_every_io500_phase_has_both_hosts_and_reads_came_from_the_other(campaign):
    workdir, *_ = campaign
    df = pd.read_csv(workdir / "io500.csv", keep_default_na=False)
    assert list(df.phase) == [*PHASES, "bw", "md", "score"]
    v = df.set_index("phase")["value"].astype(float)
    assert (v.drop("timestamp") > 0).all() and round(v["score"], 4) == round(math.sqrt(v["bw"] * v["md"]), 4)
    made = {}
    for phase in [p for p in PHASES if p != "timestamp"]:  # the timestamp: one file, made by the launching step
        rec = json.loads((workdir / "runs/all/g/path/io500/rep1" / f"{phase}.json").read_text())
        assert sorted(rec["hosts"]) == sorted([HERE, OTHER]), phase
        for host, part in rec["hosts"].items():
            assert part["hostname"] == host  # the part ran on that node, through its own client
            procs = part["processes"]
            assert len(procs) == 2 and all(q["items"] > 0 for q in procs), (phase, host, procs)
            if phase.endswith("write"):
                made[(phase, host)] = sum(q["items"] for q in procs)
            elif phase != "find":  # the inode each process opened was written by io500's rank for it: ior -C -Q 1
                # the next host's (-Q 2: two hosts on, here its own), mdtest -N 1 the next rank (ior-hard: all ranks')
                shift = read_shift(phase, 2, 2, "other")
                for q in procs:
                    wrote = q["written_by"]["ranks"]
                    assert wrote == ([0, 1, 2, 3] if "hard" in phase and "ior" in phase else [(q["rank"] + shift) % 4])
                assert all(q["items"] == q2["items"] for q in procs for q2 in procs)
    reasons = df.set_index("phase")["invalid_reasons"]
    for write, read in [("ior-easy-write", "ior-easy-read"), ("ior-hard-write", "ior-hard-read")]:
        assert reasons[read] == ""
        assert made[(write, HERE)] == made[(write, OTHER)] > 0
    find = json.loads((workdir / "runs/all/g/path/io500/rep1/find.json").read_text())
    # every name both hosts' processes made, seen through the shared filesystem: the mdtest files, ior-easy's file
    # per process and ior-hard's one file (IO500's find looks at ior's files too)
    assert find["amount"] == 2 * 2 * (20 + 102 + 1) + 1 and find["valid"]


def test_nothing_is_left_mounted_or_running(campaign):
    *_, left, _ = campaign
    assert left == {"processes": [], "mounts": "", "namespaces": "", "veth": 0, "volume": []}


@pytest.mark.parametrize("campaign", ["ceph"], indirect=True)  # GlusterFS runs two small daemons
def test_the_servers_fit_in_memory(campaign):
    """Every Ceph daemon and client after the campaign, each within its share of a small test machine: BlueStore's
    memory target is held at its floor (cephfs_local.OSD_MEMORY), the rest never near it."""
    _, _, seen, _, fs = campaign
    assert fs == "ceph"
    rss = seen["memory"]
    assert sorted(rss) == ["client.fsbench-n2", "client.host", "mds.a", "mgr.x", "mon.a", "osd.0", "osd.1"], rss
    print({name: f"{b / 2**20:.0f} MiB" for name, b in rss.items()})
    assert all(b < 1024 * 2**20 for b in rss.values()), rss
