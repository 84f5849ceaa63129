"""A real single-node Slurm on this machine, for trying profiles/slurm and for the tests.

    python tools/slurm_local.py start DIR    # install what is missing (apt), start munged, slurmctld, slurmd
    python tools/slurm_local.py stop DIR     # stop exactly the daemons start started (by their pid files)

Clients then need SLURM_CONF=DIR/slurm.conf in their environment. No systemd, no cgroups, no
accounting database: job status comes from squeue, finished jobs are kept MinJobAge seconds.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sinfo": "slurm-client", "munged": "munge"}
DAEMONS = ["slurmd", "slurmctld", "munged"]  # stopping order


class Unavailable(RuntimeError):
    """Slurm cannot be installed or started here."""


def _which(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")


def install() -> None:
    missing = sorted({pkg for tool, pkg in PACKAGES.items() if not _which(tool)})
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(f"Slurm is not installed ({', '.join(missing)}) and cannot be: needs root and apt-get")
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *missing]):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise Unavailable(f"{' '.join(argv)} failed: {proc.stderr.strip()[-500:]}")


def config(base: Path) -> str:
    node = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    node_line = next(line for line in node.splitlines() if line.startswith("NodeName="))
    name = node_line.split()[0].split("=", 1)[1]
    return f"""# single-node Slurm made by tools/slurm_local.py
ClusterName=fsbench
SlurmctldHost={socket.gethostname()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
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
{node_line.split(" UpTime")[0]} State=UNKNOWN
PartitionName=main Nodes={name} Default=YES MaxTime=INFINITE State=UP
"""


def start(base: Path) -> dict:
    """Start the daemons; returns the environment clients need."""
    install()
    base = base.resolve()
    for sub in ("state", "spool", "log"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    conf = base / "slurm.conf"
    conf.write_text(config(base))
    run_munge = Path("/run/munge")
    run_munge.mkdir(exist_ok=True)
    shutil.chown(run_munge, "munge", "munge")
    munge_pid = run_munge / "munged.pid"  # munged runs as user munge and writes only where it may
    munge_pid.unlink(missing_ok=True)
    subprocess.run(["runuser", "-u", "munge", "--", _which("munged"), f"--pid-file={munge_pid}"], check=True)
    shutil.copy(munge_pid, base / "munged.pid")
    # Jobs do not inherit SLURM_CONF (srun inside a job looks in /etc/slurm): point it at ours, if free.
    system_conf = Path("/etc/slurm/slurm.conf")
    if not system_conf.exists() and not system_conf.is_symlink():
        system_conf.parent.mkdir(parents=True, exist_ok=True)
        system_conf.symlink_to(conf)
    subprocess.run([_which("slurmctld"), "-f", str(conf)], check=True)
    subprocess.run([_which("slurmd"), "-f", str(conf)], check=True)
    env = {"SLURM_CONF": str(conf)}
    for _ in range(150):
        state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=os.environ | env)
        if state.stdout.strip() == "idle":
            return env
        time.sleep(0.2)
    stop(base)
    raise Unavailable(f"the Slurm node did not become idle (sinfo said {state.stdout.strip() or state.stderr.strip()})")


def stop(base: Path) -> list[str]:
    """Stop the daemons start() started, by their pid files; returns what was stopped."""
    stopped = []
    for daemon in DAEMONS:
        pid_file = base / f"{daemon}.pid"
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
    system_conf = Path("/etc/slurm/slurm.conf")
    if system_conf.is_symlink() and system_conf.resolve() == (base / "slurm.conf").resolve():
        system_conf.unlink()
    return stopped


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit(__doc__)
    where = Path(sys.argv[2])
    if sys.argv[1] == "start":
        print(f"export SLURM_CONF={start(where)['SLURM_CONF']}")
    else:
        print("\n".join(stop(where)) or "nothing to stop")
