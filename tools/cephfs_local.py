"""A small real CephFS for the local test cluster (tools/slurm_local.py's `ceph` shared filesystem).

One mon, one mgr, OSDS OSDs and one MDS from Debian's packages (ceph 16.2), their data under DIR/ceph (their
sockets and pid files in run_dir(DIR)/ceph, a short path in /run: a socket's path is short) and listening on
this host's end of the nodes' veths (slurm_local.NET.1), and a ceph-fuse client per node mounting the filesystem at
SHARED: this host's in its own namespaces, each extra node's inside its network and mount namespaces, so that no
node reads through another's client cache. This kernel has no LVM and no device-mapper, so the OSDs are BlueStore
on a sparse file each, as Ceph's own src/vstart.sh makes them. Every daemon writes a pid file and
is stopped by it (never by name); `stop` unmounts every client first.

The clients' object cache (client_oc) is off: drop_caches does not reach it and mincore cannot see it, so with it
on a read after a cache drop could be served from ceph-fuse's memory. Off, the kernel's FUSE page cache is the only
data cache left, and drop_caches empties that one.

The MDS answers each request only once it is in its journal (`mds early reply = false`). With early replies a
request keeps its locks until its journal entry is flushed, which the MDS does at its next tick (mds_tick_interval,
5 s) unless something asks sooner, so a request of another client that needs the same lock waits for that tick:
io500's mdtest-hard-delete (each process unlinking the next one's files in one shared folder) took 0.6 s an unlink
with 2 clients and 2.3 s with 4 (measured 2026-12-06, 102 files a process: 61 s and 234 s; without early replies
0.5 s and 0.7 s, each request flushing the journal, ~10 ms here).

`stop` kills the MDS (SIGKILL): on SIGTERM its shutdown can fail a journal write in flight with ESHUTDOWN, which
Ceph takes for being blocklisted, and it respawns, as a new process (exec, then a fork): a ceph-mds was left
running after a stop (seen 2026-12-06). The cluster is thrown away afterwards: the MDS has nothing to keep.
"""

import hashlib
import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import apt_install
from apt_install import Unavailable, which

PACKAGES = {
    "ceph-mon": "ceph-mon",
    "ceph-mgr": "ceph-mgr",
    "ceph-osd": "ceph-osd",
    "ceph-mds": "ceph-mds",
    "ceph-fuse": "ceph-fuse",
    "ceph": "ceph-common",
    "monmaptool": "ceph-base",
}
OSDS = 2
FS = "cephfs"  # the filesystem's name (the cluster is this test cluster's own: no other is there)
FS_TYPE = "fuse.ceph-fuse"  # what findmnt (and so a record's fs_type) calls a ceph-fuse mount
OSD_SIZE = 8 * 2**30  # each OSD's BlueStore file: sparse, it takes only what is written
# BlueStore's memory target's floor (Pacific): the default, 4 GiB per OSD, would be most of a test machine.
OSD_MEMORY = 896 * 2**20
PG_NUM = 16  # per pool: enough to spread a file's objects over both OSDs, few enough to start at once


def run_dir(base: Path) -> Path:
    """Where the local cluster under `base` keeps its sockets and pid files: short and in /run whatever `base` is, as a
    socket's path holds at most 107 bytes (sun_path). CI's tmp folder for a test is long: glusterd failed to start
    under it, slurmd could not start a job step (its socket \"is too long (130 > 108)\")."""
    return Path("/run") / f"fsbench-{hashlib.sha1(str(base.resolve()).encode()).hexdigest()[:12]}"


def conf(cdir: Path, run: Path, addr: str) -> str:
    """ceph.conf: every daemon's data and logs under `cdir`, its sockets and pid files in `run`; one replica."""
    return f"""[global]
fsid = {uuid.uuid4()}
mon host = [v2:{addr}:3300,v1:{addr}:6789]
public addr = {addr}
auth cluster required = none
auth service required = none
auth client required = none
run dir = {run}
admin socket = {run}/$name.asok
pid file = {run}/$name.pid
log file = {cdir}/log/$name.log
crash dir = {cdir}/crash
ms bind ipv6 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
[mon]
mon data = {cdir}/mon.$id
[mgr]
mgr data = {cdir}/mgr.$id
[osd]
osd data = {cdir}/osd.$id
osd objectstore = bluestore
bluestore block create = true
bluestore block size = {OSD_SIZE}
bluestore fsck on mount = false
osd memory target = {OSD_MEMORY}
[mds]
mds data = {cdir}/mds.$id
mds early reply = false
[client]
client oc = false
client mount uid = 0
client mount gid = 0
"""


def _run(argv: list[str], timeout: float = 120) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise Unavailable(f"{' '.join(argv)} did not answer in {timeout:.0f} s") from e
    if proc.returncode != 0:
        raise Unavailable(f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc.stdout


def _ceph(cdir: Path, *args: str, timeout: float = 120) -> str:
    return _run([which("ceph"), "-c", str(cdir / "ceph.conf"), f"--connect-timeout={int(timeout)}", *args], timeout)


def _wait(what: str, ready: Callable[[], bool], cdir: Path, wait_s: float = 120) -> None:
    deadline = time.monotonic() + wait_s
    while not ready():
        if time.monotonic() > deadline:
            raise Unavailable(f"{what} did not come up in {wait_s:.0f} s (see {cdir}/log)")
        time.sleep(0.5)


def _status(cdir: Path) -> dict:
    return json.loads(_ceph(cdir, "status", "--format=json"))


def start(
    base: Path, shared: Path, nodes: list[str | None], addr: str, in_node: Callable[[str | None], list[str]]
) -> None:
    """The cluster under base/ceph, listening on `addr`, and a ceph-fuse client per node (None: this host; `in_node`
    gives the prefix that runs a command there) mounting the filesystem at `shared`."""
    apt_install.install(PACKAGES, "the shared CephFS")
    cdir = base / "ceph"
    for sub in ("log", "crash", "mon.a", "mgr.x", "mds.a", *(f"osd.{i}" for i in range(OSDS))):
        (cdir / sub).mkdir(parents=True, exist_ok=True)
    (run_dir(base) / "ceph").mkdir(parents=True, exist_ok=True)
    (base / "shared").write_text(str(shared))  # for stop
    config = cdir / "ceph.conf"
    config.write_text(conf(cdir, run_dir(base) / "ceph", addr))
    c = ["-c", str(config)]
    fsid = conf_value(config, "fsid")
    _run([which("monmaptool"), "--create", "--fsid", fsid, "--addv", "a", f"[v2:{addr}:3300,v1:{addr}:6789]",
          str(cdir / "monmap")])  # fmt: skip
    _run([which("ceph-mon"), *c, "-i", "a", "--mkfs", "--monmap", str(cdir / "monmap")])
    _run([which("ceph-mon"), *c, "-i", "a"])
    _wait("the Ceph mon", lambda: _quorum(cdir), cdir)
    _run([which("ceph-mgr"), *c, "-i", "x"])
    for i in range(OSDS):
        osd_uuid = str(uuid.uuid4())
        osd_id = _ceph(cdir, "osd", "new", osd_uuid).strip()
        assert osd_id == str(i), osd_id  # a new cluster numbers its OSDs from 0
        _run([which("ceph-osd"), *c, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid], timeout=300)
        _run([which("ceph-osd"), *c, "-i", osd_id])
    _wait(f"{OSDS} Ceph OSDs", lambda: _osds_up(cdir) == OSDS, cdir)
    for pool in ("cephfs_metadata", "cephfs_data"):
        _ceph(cdir, "osd", "pool", "create", pool, str(PG_NUM), str(PG_NUM))
    _ceph(cdir, "fs", "new", FS, "cephfs_metadata", "cephfs_data")
    _run([which("ceph-mds"), *c, "-i", "a"])
    _wait("the Ceph MDS", lambda: _mds_active(cdir), cdir)
    shared.mkdir(parents=True, exist_ok=True)
    for node in nodes:
        name = node or "host"
        client = [which("ceph-fuse"), *c, "--id", name, str(shared)]
        _run([*in_node(node), *client])  # it forks once mounted


def conf_value(config: Path, key: str) -> str:
    return next(line.split("=", 1)[1].strip() for line in config.read_text().splitlines() if line.startswith(key))


def _quorum(cdir: Path) -> bool:
    try:
        return bool(_status(cdir).get("quorum_names"))
    except Unavailable:
        return False


def _osds_up(cdir: Path) -> int:
    return sum(osd["up"] for osd in json.loads(_ceph(cdir, "osd", "dump", "--format=json"))["osds"])


def _mds_active(cdir: Path) -> bool:
    fsmap = json.loads(_ceph(cdir, "fs", "dump", "--format=json"))
    return any(i.get("state") == "up:active" for f in fsmap["filesystems"] for i in f["mdsmap"]["info"].values())


def memory(base: Path) -> dict[str, int]:
    """Each running daemon's and client's resident memory, in bytes, by its Ceph name (mon.a, osd.0, client.host…)."""
    rss = {}
    for pid_file in sorted((run_dir(base) / "ceph").glob("*.pid")):
        try:
            status = Path(f"/proc/{pid_file.read_text().split()[0]}/status").read_text()
        except (OSError, IndexError):
            continue
        kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))
        rss[pid_file.stem] = int(kib) * 1024
    return rss


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop(base: Path, in_node: Callable[[str | None], list[str]], end: Callable[[int], None]) -> list[str]:
    """Unmount every node's client, then kill the MDS, stop the OSDs, the mgr and the mon; returns what was stopped."""
    cdir = base / "ceph"
    if not (base / "shared").exists() or not cdir.exists():
        return []
    shared, stopped = (base / "shared").read_text(), []
    run = run_dir(base) / "ceph"
    order = sorted(run.glob("client.*.pid")) + [run / "mds.a.pid", *sorted(run.glob("osd.*.pid")), run / "mgr.x.pid"]
    for pid_file in [*order, run / "mon.a.pid"]:
        if not pid_file.exists():
            continue
        name, pid = pid_file.stem, int(pid_file.read_text().split()[0])
        if name.startswith("client."):
            node = name.removeprefix("client.")
            node = None if node == "host" else node
            subprocess.run([*in_node(node), "umount", shared], capture_output=True)  # it exits once unmounted
        if name.startswith("mds."):  # before it can respawn (see above)
            kill(pid)
        end(pid)
        if name.startswith("client."):  # a client that was killed leaves its mount dead, not gone
            subprocess.run([*in_node(node), "umount", "-l", shared], capture_output=True)
        pid_file.unlink(missing_ok=True)
        stopped.append(f"{name} ({pid})")
    (base / "shared").unlink()
    return stopped
