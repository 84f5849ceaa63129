"""A real Slurm on this machine, for trying profiles/slurm and for the tests.

    python tools/slurm_local.py start DIR [NODES [SHARED [FS]]]  # install what is missing (apt), start munged,
                                          # slurmctld, slurmd (and GlusterFS on SHARED, or CephFS with FS=ceph)
    python tools/slurm_local.py stop DIR    # stop exactly what start started (pid files, mounts, namespaces)

Clients then need SLURM_CONF=DIR/slurm.conf in their environment. No systemd, no cgroups, no
accounting database: job status comes from squeue, finished jobs are kept MinJobAge seconds.
Jobs do not inherit SLURM_CONF, so /etc/slurm/slurm.conf is made a link to DIR/slurm.conf while it runs; if
that file belongs to another Slurm (it is not a link to a slurm.conf this script wrote), start refuses.

NODES > 1 adds nodes fsbench-n2, fsbench-n3, …: each a slurmd in a network namespace of its own (a veth
to a bridge on this host, 10.231.0.N; this host 10.231.0.1) and a UTS namespace naming it, so that its jobs see
their own host name. They share this machine's kernel, disks and files, as nodes share a parallel filesystem.

SHARED (a folder, NODES > 1) adds one real shared filesystem: a GlusterFS volume (Debian's glusterfs-server, one
brick under DIR/gluster) served by a glusterd of this cluster's own at 10.231.0.1 and mounted at SHARED by every
node through a FUSE client of its own: this host's in its namespaces, each extra node's inside its network
namespace and a mount namespace of its own (its slurmd and so its jobs live there), so that no node reads
through another's client cache, and with the client's own caches off (UNCACHED). stop unmounts every client and
stops the brick and glusterd. FS=ceph serves a CephFS there instead (tools/cephfs_local.py: mon, mgr, 2 OSDs, MDS,
a ceph-fuse client per node), mounted and stopped the same way.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import apt_install
import cephfs_local
from apt_install import Unavailable, which
from cephfs_local import run_dir

PACKAGES = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sinfo": "slurm-client", "munged": "munge"}
GLUSTER_PACKAGES = {"glusterd": "glusterfs-server", "gluster": "glusterfs-server", "glusterfs": "glusterfs-client"}
VOLUME = "fsbench"  # the shared volume's name (its glusterd is this cluster's own: no other volume is there)
# The GlusterFS client's own caches, in its userspace translators where drop_caches does not reach: md-cache
# (stat-prefetch), io-cache, read-ahead, quick-read, open-behind, readdir-ahead, write-behind (flush-behind is
# write-behind's). All off on the test volume, so that a read or stat after a cache drop is cold, as on a local
# filesystem; the kernel's FUSE caches (pages, entries, attributes) are dropped by drop_caches.
UNCACHED = ["stat-prefetch", "io-cache", "read-ahead", "quick-read", "open-behind", "readdir-ahead", "write-behind"]
NET = "10.231.0"  # this host is .1 on the bridge of the veths, node N is .N
BRIDGE = "fsbbr0"
# Sets the namespace's host name, then becomes the daemon; the names come as arguments, never as code.
AS_NODE = 'hostname "$0" && exec "$@"'
# The same, in a mount namespace of the node's own first letting go of its copies of this machine's loop-device and
# FUSE mounts (other runs' scratch mounts at that moment): held there, they could not be released on this host.
AS_NODE_OWN_MOUNTS = (
    "awk '$1 ~ /^[/]dev[/]loop/ || $3 ~ /^fuse/ {print $2}' /proc/self/mounts | "
    'while read -r m; do umount -l "$m"; done; ' + AS_NODE
)
MARK = "# Slurm made by tools/slurm_local.py"  # the first line of every slurm.conf written here
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")  # where srun inside a job looks (SLURM_CONF is not passed on)


def install(packages: dict = PACKAGES, what: str = "a local Slurm") -> None:
    apt_install.install(packages, what)


def extra_nodes(n: int) -> list[str]:
    return [f"fsbench-n{i}" for i in range(2, n + 1)]


def config(base: Path, n: int = 1) -> str:
    node = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    node_line = next(line for line in node.splitlines() if line.startswith("NodeName="))
    name = node_line.split()[0].split("=", 1)[1]
    shape = node_line.split(" UpTime")[0].split(" ", 1)[1]  # CPUs=… RealMemory=…
    if n == 1:
        ctld, nodes = socket.gethostname(), [f"NodeName={name} {shape} State=UNKNOWN"]
    else:  # every daemon reachable over the veths: this host at .1, the others at .2, .3, …
        ctld = f"{socket.gethostname()}({NET}.1)"
        nodes = [
            f"NodeName={node} NodeAddr={NET}.{i} {shape} State=UNKNOWN"
            for i, node in enumerate([name, *extra_nodes(n)], start=1)
        ]
    names = ",".join([name, *extra_nodes(n)])
    return f"""{MARK} ({n} node(s))
ClusterName=fsbench
SlurmctldHost={ctld}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={run_dir(base)}/spool-%n
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd-%n.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd-%n.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={base}/log/jobcomp.txt
ReturnToService=2
MinJobAge=300
SchedulerType=sched/backfill
MpiDefault=none
{chr(10).join(nodes)}
PartitionName=main Nodes={names} Default=YES MaxTime=INFINITE State=UP
"""


def _written_here(conf: Path) -> bool:
    try:
        return conf.read_text().startswith(MARK)
    except OSError:
        return False


def check_system_conf(conf: Path) -> None:
    """Raise Unavailable unless SYSTEM_CONF is free for `conf`: missing, already a link to it, or a link left
    by an earlier start (its slurm.conf was written here and its slurmctld is gone, or its folder is gone)."""
    foreign = (
        f"{SYSTEM_CONF} belongs to another Slurm (tools/slurm_local.py did not write it{{}}): srun inside a job "
        "would read it and not reach this cluster; move it away to run the local Slurm here"
    )
    if not SYSTEM_CONF.is_symlink():
        if SYSTEM_CONF.exists():
            raise Unavailable(foreign.format(""))
        return
    target = SYSTEM_CONF.resolve()
    if target == conf.resolve() or not target.exists():
        return
    if not _written_here(target):
        raise Unavailable(foreign.format(f", it links to {target}"))
    ctld = target.parent / "slurmctld.pid"
    if ctld.exists() and Path(f"/proc/{ctld.read_text().split()[0]}").exists():
        raise Unavailable(f"another local Slurm runs from {target.parent}: stop it first (slurm_local.py stop DIR)")


def claim_system_conf(conf: Path) -> None:
    """Make SYSTEM_CONF a link to `conf`, replacing a link an earlier start left; Unavailable if it is not free."""
    check_system_conf(conf)
    if SYSTEM_CONF.is_symlink():
        SYSTEM_CONF.unlink()
    SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SYSTEM_CONF.symlink_to(conf)


def release_system_conf(conf: Path) -> None:
    """Remove SYSTEM_CONF if it is the link claim_system_conf(conf) made."""
    if SYSTEM_CONF.is_symlink() and SYSTEM_CONF.resolve() == conf.resolve():
        SYSTEM_CONF.unlink()


def _net(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise Unavailable(f"{' '.join(argv)} failed: {proc.stderr.strip()}")


def add_namespaces(n: int) -> None:
    """A network namespace per extra node, joined to this host by a veth pair; the host's ends on one bridge (this
    host .1 on it), so that every node reaches every other: a job's batch step may run on any of its nodes, and srun
    there starts its tasks on the others."""
    if n > 1 and not shutil.which("ip"):
        raise Unavailable("several nodes need iproute2 (`ip`) for their network namespaces")
    if n > 1:
        _net(["ip", "link", "add", BRIDGE, "type", "bridge"])
        _net(["ip", "addr", "add", f"{NET}.1/24", "dev", BRIDGE])
        _net(["ip", "link", "set", BRIDGE, "up"])
    for i, node in enumerate(extra_nodes(n), start=2):
        host_end, node_end = f"fsbv{i}h", f"fsbv{i}n"
        _net(["ip", "netns", "add", node])
        _net(["ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end])
        _net(["ip", "link", "set", node_end, "netns", node])
        _net(["ip", "link", "set", host_end, "master", BRIDGE])
        _net(["ip", "link", "set", host_end, "up"])
        for argv in (
            ["ip", "addr", "add", f"{NET}.{i}/24", "dev", node_end],
            ["ip", "link", "set", node_end, "up"],
            ["ip", "link", "set", "lo", "up"],
        ):
            _net(["ip", "netns", "exec", node, *argv])


def remove_namespaces(base: Path) -> list[str]:
    """The namespaces start() made (deleting one deletes its veth pair too)."""
    made = base / "namespaces"
    names = made.read_text().split() if made.exists() else []
    for node in names:
        # A job step killed or cancelled there can leave its processes behind (proctrack/linuxproc loses a
        # process reparented to init): they would hold the namespace, and its veth, past the delete.
        pids = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True).stdout.split()
        for pid in map(int, pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "delete", node], capture_output=True)
    if names:
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True)
    made.unlink(missing_ok=True)
    return [f"netns {node}" for node in names]


def _alive(pid: int) -> bool:
    """Running (a zombie has ended: it only waits for init to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _end(pid: int, wait: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if `pid` still runs after `wait` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        for _ in range(int(wait * 10)):
            if not _alive(pid):
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)


def mount_namespace(base: Path, node: str) -> Path:
    """The file that holds an extra node's mount namespace (a bind mount of it, as `ip netns` keeps a net one)."""
    return base / f"mntns-{node}"


def _in_node(base: Path, node: str | None) -> list[str]:
    """The prefix that runs a command in `node`'s network and mount namespaces (None: this host)."""
    if node is None:
        return []
    return ["nsenter", f"--net=/run/netns/{node}", f"--mount={mount_namespace(base, node)}"]


def gluster_run(base: Path) -> Path:
    """glusterd's run-directory (its sockets, its bricks' pid files): under the cluster's short run_dir, as a
    socket's path under CI's tmp folder was too long ("listen-path has value length 107")."""
    return run_dir(base) / "gluster"


def _gluster(gdir: Path, *args: str) -> None:
    cli = [which("gluster"), f"--glusterd-sock={gluster_run(gdir.parent)}/glusterd.socket", "--mode=script"]
    _net([*cli, f"--log-file={gdir}/log/cli.log", *args])


def glusterd_vol(gdir: Path) -> str:
    """glusterd's own volfile: its state, sockets and pid files under `gdir`, not /var/lib/glusterd."""
    return f"""volume management
    type mgmt/glusterd
    option working-directory {gdir}/wd
    option run-directory {gluster_run(gdir.parent)}
    option glusterd-sockfile {gluster_run(gdir.parent)}/glusterd.socket
    option transport-type socket
    option transport.socket.bind-address {NET}.1
    option transport.socket.listen-port 24007
    option ping-timeout 0
    option event-threads 1
end-volume
"""


def _fs_type(base: Path, node: str | None, path: Path) -> str:
    argv = [*_in_node(base, node), "findmnt", "-n", "-o", "FSTYPE", "--mountpoint", str(path)]
    return subprocess.run(argv, capture_output=True, text=True).stdout.strip()


def start_shared(base: Path, shared: Path, n: int) -> None:
    """glusterd, one volume over a brick in base/gluster, and a FUSE client per node mounting it at `shared`."""
    install(GLUSTER_PACKAGES, "the shared GlusterFS volume")
    gdir = base / "gluster"
    for sub in ("wd", "log", "brick"):
        (gdir / sub).mkdir(parents=True, exist_ok=True)
    gluster_run(base).mkdir(parents=True, exist_ok=True)
    (gdir / "glusterd.vol").write_text(glusterd_vol(gdir))
    (base / "shared").write_text(str(shared))  # for stop
    pid, log = gdir / "glusterd.pid", gdir / "log/glusterd.log"
    try:
        _net([which("glusterd"), "-f", str(gdir / "glusterd.vol"), "-p", str(pid), "-l", str(log)])
    except Unavailable as e:  # glusterd says why in its log, not on stderr
        said = log.read_text(errors="replace").splitlines()[-10:] if log.exists() else []
        raise Unavailable("\n".join([str(e), *said])) from None
    for _ in range(100):
        if (gluster_run(base) / "glusterd.socket").exists():
            break
        time.sleep(0.1)
    # force: the brick lies on the root filesystem, which gluster refuses by default
    _gluster(gdir, "volume", "create", VOLUME, f"{NET}.1:{gdir}/brick", "force")
    _gluster(gdir, "volume", "set", VOLUME, *(x for o in UNCACHED for x in (f"performance.{o}", "off")))
    _gluster(gdir, "volume", "start", VOLUME)
    shared.mkdir(parents=True, exist_ok=True)
    for node in [None, *extra_nodes(n)]:
        name = node or "host"
        client = [which("glusterfs"), "--process-name", "fuse", f"--volfile-server={NET}.1", f"--volfile-id=/{VOLUME}"]
        client += [f"--log-file={gdir}/log/client-{name}.log", f"--pid-file={gdir}/client-{name}.pid", str(shared)]
        _net([*_in_node(base, node), *client])
        for _ in range(100):  # the client daemonizes before its FUSE mount is made
            if _fs_type(base, node, shared) == "fuse.glusterfs":
                break
            time.sleep(0.1)
        else:
            raise Unavailable(f"the GlusterFS client of {name} did not mount {shared} (see {gdir}/log)")


def _started_with(argument: str) -> list[int]:
    """The processes whose command line holds `argument` (a pid file of this cluster's own: never matched by name)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:
            pass
    return found


def stop_shared(base: Path) -> list[str]:
    """Unmount every node's client, stop the brick and glusterd; returns what was stopped."""
    if not (base / "shared").exists():
        return []
    shared, gdir, stopped = (base / "shared").read_text(), base / "gluster", []
    for pid_file in sorted(gdir.glob("client-*.pid")):
        name = pid_file.stem.removeprefix("client-")
        node = None if name == "host" else name
        if node is None or mount_namespace(base, node).exists():
            subprocess.run([*_in_node(base, node), "umount", shared], capture_output=True)
        pid = int(pid_file.read_text().split()[0])
        for _ in range(50):  # it exits once unmounted
            if not _alive(pid):
                break
            time.sleep(0.1)
        _end(pid)
        pid_file.unlink(missing_ok=True)
        stopped.append(f"glusterfs client {name} ({pid})")
    bricks = sorted((gluster_run(base) / "vols").glob("*/*.pid"))
    for pid_file in bricks:
        pid = int(pid_file.read_text().split()[0])
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if _alive(pid) else []
        _end(pid)
        if b"-S" in argv:  # its socket is made in /var/run/gluster whatever run-directory says
            Path(argv[argv.index(b"-S") + 1].decode()).unlink(missing_ok=True)
        pid_file.unlink(missing_ok=True)
        stopped.append(f"glusterfsd ({pid})")
    brick_log = Path("/var/log/glusterfs/bricks") / (re.sub("/", "-", str(gdir / "brick")).lstrip("-") + ".log")
    brick_log.unlink(missing_ok=True)  # likewise its log, in glusterd's fixed log folder
    if (gdir / "glusterd.pid").exists():
        # An empty pid file (glusterd killed while it wrote it): the glusterd started with that pid file, found by it
        said = (gdir / "glusterd.pid").read_text().split()
        for pid in [int(said[0])] if said else _started_with(str(gdir / "glusterd.pid")):
            _end(pid)
            stopped.append(f"glusterd ({pid})")
        (gdir / "glusterd.pid").unlink(missing_ok=True)
    (base / "shared").unlink()
    return stopped


FILESYSTEMS = ("glusterfs", "ceph")  # what start() may serve at `shared`


def start(base: Path, n: int = 1, shared: Path | None = None, fs: str = "glusterfs") -> dict:
    """Start the daemons (n nodes; a shared filesystem all mount at `shared`, if given: a GlusterFS volume, or with
    fs="ceph" a CephFS, tools/cephfs_local.py); returns the environment clients need."""
    base = base.resolve()
    if shared is not None and n < 2:
        raise ValueError("a shared filesystem needs 2 or more nodes (its server listens on their veths)")
    if fs not in FILESYSTEMS:
        raise ValueError(f"fs={fs!r}: a shared filesystem is one of {', '.join(FILESYSTEMS)}")
    check_system_conf(base / "slurm.conf")  # before anything is installed or started
    # Another cluster's nodes (one started without the lock, or mid-start): deleting what we failed to make
    # would delete theirs, so refuse before making any.
    taken = [node for node in extra_nodes(n) if Path(f"/run/netns/{node}").exists()]
    if taken:
        raise Unavailable(f"another local Slurm runs: its node namespaces {', '.join(taken)} exist")
    munged = Path("/run/munge/munged.pid").read_text().split() if Path("/run/munge/munged.pid").exists() else []
    if munged and _alive(int(munged[0])):
        raise Unavailable("another local Slurm runs: its munged (/run/munge/munged.pid) is running")
    install()
    for sub in ["state", "log"]:
        (base / sub).mkdir(parents=True, exist_ok=True)
    for node in extra_nodes(n):
        (run_dir(base) / f"spool-{node}").mkdir(parents=True, exist_ok=True)
    conf = base / "slurm.conf"
    conf.write_text(config(base, n))
    claim_system_conf(conf)  # jobs do not inherit SLURM_CONF: srun inside a job reads /etc/slurm/slurm.conf
    (base / "namespaces").write_text(" ".join(extra_nodes(n)))
    try:
        add_namespaces(n)
    except Unavailable:
        remove_namespaces(base)
        release_system_conf(conf)
        raise
    run_munge = Path("/run/munge")
    run_munge.mkdir(exist_ok=True)
    shutil.chown(run_munge, "munge", "munge")
    munge_pid = run_munge / "munged.pid"  # munged runs as user munge and writes only where it may
    munge_pid.unlink(missing_ok=True)
    proc = subprocess.run(["runuser", "-u", "munge", "--", which("munged"), f"--pid-file={munge_pid}"], text=True)
    if proc.returncode != 0:  # another start got there first: undo ours (our namespaces, our link) and say so
        stop(base)
        raise Unavailable(f"another local Slurm runs: munged did not start (exit {proc.returncode})")
    shutil.copy(munge_pid, base / "munged.pid")
    name = config(base, 1).split("NodeName=")[1].split()[0]
    (run_dir(base) / f"spool-{name}").mkdir(parents=True, exist_ok=True)
    daemons = [[which("slurmctld"), "-f", str(conf)], [which("slurmd"), "-f", str(conf), "-N", name]]
    for node in extra_nodes(n):  # nsenter, not `ip netns exec`: that one remounts /sys without cgroups
        own_mounts = []
        if shared is not None:  # a mount namespace of its own (kept by a file) where its own client mounts
            mount_namespace(base, node).touch()
            own_mounts = [f"--mount={mount_namespace(base, node)}", "--propagation", "private"]
        daemons.append(
            [
                "nsenter",
                f"--net=/run/netns/{node}",
                "unshare",
                "--uts",
                *own_mounts,
                "--",
                "sh",
                "-c",
                AS_NODE_OWN_MOUNTS if own_mounts else AS_NODE,
                node,
                which("slurmd"),
                "-f",
                str(conf),
                "-N",
                node,
            ]
        )
    for argv in daemons:
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            stop(base)
            raise Unavailable(f"{' '.join(argv)} failed: {proc.stderr.strip()[-500:]} (see {base}/log)")
    if shared is not None:
        try:
            if fs == "ceph":
                nodes = [None, *extra_nodes(n)]
                cephfs_local.start(base, Path(shared).resolve(), nodes, f"{NET}.1", lambda node: _in_node(base, node))
            else:
                start_shared(base, Path(shared).resolve(), n)
        except (Unavailable, OSError) as e:
            stop(base)
            raise Unavailable(f"the shared filesystem did not start: {e}") from e
    env = {"SLURM_CONF": str(conf)}
    for _ in range(150):
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=os.environ | env)
        if state.stdout.split() == ["idle"]:
            return env
        time.sleep(0.2)
    stop(base)
    raise Unavailable(
        f"the Slurm nodes did not become idle (sinfo said {state.stdout.strip() or state.stderr.strip()})"
    )


def stop(base: Path) -> list[str]:
    """Stop the daemons start() started, by their pid files; returns what was stopped."""
    stopped = cephfs_local.stop(base, lambda node: _in_node(base, node), _end) + stop_shared(base)
    pid_files = sorted(base.glob("slurmd-*.pid")) + [base / "slurmctld.pid", base / "munged.pid"]
    for pid_file in pid_files:
        daemon = pid_file.stem
        if not pid_file.exists():
            continue
        pid = int(pid_file.read_text().split()[0])
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        pid_file.unlink(missing_ok=True)  # a daemon may remove its own on the way out
        stopped.append(f"{daemon} ({pid})")
    release_system_conf(base / "slurm.conf")
    for held in sorted(base.glob("mntns-*")):  # the slurmd is gone: the last hold on its mount namespace
        subprocess.run(["umount", str(held)], capture_output=True)
        held.unlink()
        stopped.append(f"mntns {held.name.removeprefix('mntns-')}")
    shutil.rmtree(run_dir(base), ignore_errors=True)  # sockets and pid files: every daemon is gone
    return stopped + remove_namespaces(base)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4, 5, 6) or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    where = Path(sys.argv[2])
    if sys.argv[1] == "start":
        nodes, shared = int(sys.argv[3]) if len(sys.argv) > 3 else 1, Path(sys.argv[4]) if len(sys.argv) > 4 else None
        fs = sys.argv[5] if len(sys.argv) > 5 else "glusterfs"
        print(f"export SLURM_CONF={start(where, nodes, shared, fs)['SLURM_CONF']}")
    else:
        print("\n".join(stop(where)) or "nothing to stop")
