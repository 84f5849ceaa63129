"""make bench-peers: fsbench held against IOR and mdtest (issue 27), with the same parameters on the same storage.

The peers are built out of tree by tools/peers.py from ../shared/peers/ior-5fcf0ba.tar.gz (hpc/ior at 5fcf0ba,
GPL-2.0; never copied into this repository) and run with Open MPI from apt, as root with OMPI_ALLOW_RUN_AS_ROOT=1,
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 and --oversubscribe (2 ranks on this 2-core VM).

What is compared, per storage (each a folder on a mounted filesystem):
- block I/O, what fsbench has today: 2 streams, a file each, O_DIRECT, 1 MiB blocks, SIZE per stream (the sizes
  per storage: SCALES). fsbench: the
  python engine as a cell runs it (`run_engine("python", op, Job(...))`), a write's figure over seconds_durable
  (its fsync inside), a read after the cache was dropped. IOR: `ior -a POSIX --posix.odirect -F -w -e -k -t 1m
  -b SIZE -i 1`, the cache dropped, then `ior ... -F -r -C ...` (-F a file per process, -e: fsync at the end of the
  write, inside IOR's write time, -k: files kept for the read, -C: each rank reads another rank's file); its own
  summary's write and read Max(MiB) (MiB/s, 1 iteration).
- metadata, mdtest-easy's shape: 2 processes, FILES empty files each in a directory of its own, created, stat'ed,
  read and removed, the caches dropped (sync; echo 3 > drop_caches) before every phase. fsbench: its metadata
  engine (fsbench.engines.metadata.run_phase, MetaJob(streams=2, files=FILES, file_size=0, dirs=1, fsync=none)).
  mdtest: one run per phase, `mdtest -F -P -u -L -n FILES -C|-T|-E|-r -d DIR`, its "File creation/stat/read/
  removal" rate.
- IO500's twelve phases (fsbench's io500 phases, issue 27 part 1, on a path array at the storage, each as its
  workflow rule runs it) against IOR and mdtest run as IO500's io500.sh / src/phase_*.c runs them, with the same
  tunables (SCALES below); find against IO500's pfind where tools/peers.py finds its tarball (else one GNU find).
  Values in IO500's units (GiB/s, kIOPS). Paired phase by phase, so both tools meet the storage in one state.

Side by side in time: in each of ROUNDS rounds every phase runs fsbench, the peer and the peer again, their turns
rotating (order()); the ratio fsbench/peer is taken per round and its median over the rounds reported beside both
medians, and beside it the peer against itself (peer again/peer): what this storage does to one tool run twice.
Targets (issue 27): block I/O within 0.95-1.05 of IOR, metadata within 0.9-1.1 of mdtest.

Storage: `ext4-ram`, a loop device (direct I/O) over an image in /dev/shm with ext4 on it; `glusterfs` and
`cephfs`, the test cluster's GlusterFS volume or CephFS (tools/slurm_local.py, started and stopped here under
/tmp/fsbench-slurm.lock, mounted through this host's own FUSE client). STORAGES=a,b runs some of them: the others
keep their last tables in the doc, dated. SMOKE=1: tiny sizes, one round, ext4-ram only, nothing written
to docs/. Root; writes docs/bench-peers.md.
"""

import contextlib
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tools"))

import peers  # noqa: E402  (tools/peers.py)
from vm import memory_kept  # noqa: E402  (benchmarks/vm.py)

from fsbench.campaign.cells import CellSpec, io500_places  # noqa: E402
from fsbench.campaign.config import validate  # noqa: E402
from fsbench.campaign.plan import Plan  # noqa: E402
from fsbench.engines import metadata  # noqa: E402
from fsbench.engines.job import Job, Stream  # noqa: E402
from fsbench.engines.table import run as run_engine  # noqa: E402
from fsbench.io500 import phases as ph500  # noqa: E402
from fsbench.io500.launch import phase_step  # noqa: E402
from fsbench.io500.result_files import read_summary  # noqa: E402
from fsbench.io500.table import table as io500_table  # noqa: E402
from fsbench.storage import devices  # noqa: E402
from fsbench.toolkit.sizes import format_size  # noqa: E402
from fsbench.toolkit.system import exit_on_sigterm  # noqa: E402

MiB, GiB = 2**20, 2**30
SMOKE = os.environ.get("SMOKE") == "1"
RANKS = 2
BLOCK = MiB
ROUNDS = 1 if SMOKE else int(os.environ.get("ROUNDS", "6"))
IMAGE = 256 * MiB if SMOKE else 8 * GiB  # under /dev/shm: the three runs' io500 data at once (~6.2 GB) fit
IO_GOAL, MD_GOAL = (0.95, 1.05), (0.9, 1.1)
# IO500's phases in every round: on GlusterFS a phase's peer against itself ranged 0.59-1.37 within one run and the
# rows that missed in one run of 3 rounds met in the next (docs/bench-peers.md); a multiple of 3: each turn as often
IO500_ROUNDS = 1 if SMOKE else int(os.environ.get("IO500_ROUNDS", str(ROUNDS)))


def io500_tunables(block_size: str, segments: int, easy: int, hard: int) -> dict:
    """IO500's tunables, the same for fsbench's io500 phases and the peer commands; stonewall-time beyond these
    sizes, so that both write everything (the peer then needs no -D)."""
    return {
        "processes": RANKS,
        "ior-easy": {"transferSize": "1MiB", "blockSize": block_size},
        "ior-hard": {"segmentCount": segments},
        "mdtest-easy": {"n": easy},
        "mdtest-hard": {"n": hard},
        "stonewall-time": 300,
    }


@dataclass(frozen=True)
class Scale:
    """How much both tools move on one storage: enough that most phases last a second or more there (IO500 runs
    each write phase for 300 s; a phase of a few milliseconds measures its own start and end). On the RAM-backed
    ext4 that is ten times what GlusterFS needs."""

    size: int  # block I/O, bytes per stream
    files: int  # metadata, files per process
    io5: dict  # IO500's tunables


SCALES = {
    "ext4-ram": Scale(2 * GiB, 20000, io500_tunables("512MiB", 10000, 20000, 10000)),
    "glusterfs": Scale(GiB, 2000, io500_tunables("256MiB", 2000, 2000, 1000)),
    "cephfs": Scale(GiB, 1000, io500_tunables("256MiB", 2000, 1000, 500)),
}
if SMOKE:
    SCALES = {"ext4-ram": Scale(16 * MiB, 200, io500_tunables("4MiB", 20, 50, 30))}
STORAGES = list(SCALES) if SMOKE else os.environ.get("STORAGES", ",".join(SCALES)).split(",")
MD_FLAG = {"create": "-C", "stat": "-T", "read": "-E", "delete": "-r"}
MD_LINE = {"create": "File creation", "stat": "File stat", "read": "File read", "delete": "File removal"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


@dataclass(frozen=True)
class Phase:
    name: str  # e.g. "write", "md stat"
    unit: str  # MB/s | files/s
    goal: tuple[float, float]
    fsbench: str  # what fsbench runs, in words
    peer: str  # the peer's command


# --- the peers ----------------------------------------------------------------------------------------------


def mpirun(bin_dir: Path, tool: str, args: list[str], ranks: int = RANKS) -> str:
    argv = [*peers.mpirun(ranks), str(bin_dir / tool), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, env=os.environ | peers.MPI_ENV, timeout=1800)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}{proc.stdout[-2000:]}")
    return proc.stdout


def ior_args(folder: Path, size: int, op: str) -> list[str]:
    """IOR's write (-w, its files kept) or read (-r, each rank another rank's file, the files removed after)."""
    size = f"{size // MiB}m"
    how = ["-w", "-e", "-k"] if op == "write" else ["-r", "-C"]
    return ["-a", "POSIX", "--posix.odirect", "-F", *how, "-t", "1m", "-b", size, "-i", "1", "-o", f"{folder}/ior"]


def ior(bin_dir: Path, folder: Path, size: int) -> dict:
    """IOR's own write and then read bandwidth (bytes/s), the caches dropped between as before fsbench's read.

    Two runs, as IO500 runs ior-easy-write and ior-easy-read: in one run (-w -r) IOR read without the drop, and on
    ext4-ram that read ran at 0.74 of the same read after a drop (6.77 against 9.20 GB/s, 6 rounds; a sync alone
    changed nothing, the drop alone all of it): a comparison of two states, not of two tools."""
    found = {}
    for op in ("write", "read"):
        if op == "read":
            drop_caches()
        out = mpirun(bin_dir, "ior", ior_args(folder, size, op))
        summary = out.split("Summary of all tests:")[-1].splitlines()
        # "write  <Max(MiB)> <Min(MiB)> ...": one iteration, so max = its figure, in MiB/s
        found.update({f[0]: float(f[1]) * MiB for line in summary if (f := line.split()) and f[0] == op})
        if op not in found:
            raise RuntimeError(f"no {op} in IOR's summary:\n{out[-2000:]}")
    return found


def mdtest_args(folder: Path, phase: str, files: int) -> list[str]:
    return ["-F", "-P", "-u", "-L", "-n", str(files), MD_FLAG[phase], "-d", str(folder)]


def mdtest(bin_dir: Path, folder: Path, phase: str, files: int) -> float:
    out = mpirun(bin_dir, "mdtest", mdtest_args(folder, phase, files))
    line = next((s for s in out.splitlines() if s.strip().startswith(MD_LINE[phase])), None)
    if line is None:
        raise RuntimeError(f"no '{MD_LINE[phase]}' in mdtest's output:\n{out[-2000:]}")
    return float(line.split()[2])  # the first table is the rate (ops/s), max of 1 iteration


# --- fsbench ----------------------------------------------------------------------------------------------


def block_job(folder: Path, size: int) -> Job:
    streams = tuple(Stream(str(folder / f"fsbench-{s}.dat")) for s in range(RANKS))
    return Job(streams, size, BLOCK, direct=True)


def fsbench_io(folder: Path, size: int) -> dict:
    """The python engine's write (bytes over seconds_durable) then, caches dropped, its read; files removed."""
    job = block_job(folder, size)
    try:
        write = run_engine("python", "write", job)
        drop_caches()
        read = run_engine("python", "read", job)
    finally:
        for s in job.streams:
            Path(s.path).unlink(missing_ok=True)
    for op, figure in (("write", write), ("read", read)):
        if figure["bytes"] != RANKS * size:
            raise RuntimeError(f"fsbench {op} moved {figure['bytes']} of {RANKS * size} bytes")
    return {"write": write["bytes"] / write["seconds_durable"], "read": read["bytes"] / read["seconds"]}


def meta_job(folder: Path, files: int) -> metadata.MetaJob:
    return metadata.MetaJob(str(folder), RANKS, files, 0, 1, fsync="none")


# --- IO500's phases ---------------------------------------------------------------------------------------


def pfind_args(d: Path) -> list[str]:
    """IO500's find (src/phase_find.c): pfind over the whole data folder, files newer than the run's timestamp
    file, 3901 bytes, named *01*, counted (-C); its rate (-D rates) is the files it scanned over its time."""
    return [str(d), "-newer", f"{d}-timestamp", "-size", "3901c", "-name", "*01*", "-C", "-q", "10000", "-D", "rates"]


def io500_peer_commands(d: Path, io5: dict) -> dict:
    """Each phase as io500's src/phase_*.c run it (IO500/io500 at 02091cf), with the tunables io5: {phase: (tool,
    args)}: its syncs (mdtest -Y after the write phases, inside their time) and data checks (ior -R on the reads,
    mdtest -X on mdtest-hard-read), its read-from rules (ior -C -Q 1, mdtest -N 1)."""
    t, b = (format_size(io5_bytes(io5["ior-easy"][k])).replace("iB", "").lower() for k in ("transferSize", "blockSize"))
    easy = ["-C", "-Q", "1", "-g", "-G", "271", "-k", "-e", "-o", f"{d}/ior-easy/ior_file_easy", "-t", t, "-b", b]
    easy += ["-F", "-a", "POSIX"]
    hard = ["-C", "-Q", "1", "-g", "-G", "27", "-k", "-e", "-t", "47008", "-b", "47008"]
    hard += ["-s", str(io5["ior-hard"]["segmentCount"]), "-a", "POSIX", "-o", f"{d}/ior-hard/file"]
    md_easy = ["-n", str(io5["mdtest-easy"]["n"]), "-u", "-L", "-F", "-P", "-G", "270", "-N", "1"]
    md_easy += ["-d", f"{d}/mdt_easy"]
    md_hard = ["-n", str(io5["mdtest-hard"]["n"]), "-t", "-w", "3901", "-e", "3901", "-F", "-P", "-N", "1"]
    md_hard += ["-d", f"{d}/mdt_hard"]
    return {
        "ior-easy-write": ("ior", [*easy, "-w"]),
        "mdtest-easy-write": ("mdtest", [*md_easy, "-C", "-Y"]),
        "ior-hard-write": ("ior", [*hard, "-w"]),
        "mdtest-hard-write": ("mdtest", [*md_hard, "-C", "-Y"]),
        # IO500's pfind where tools/peers.py can build it (its tarball found), else one GNU find process
        "find": ("pfind", pfind_args(d)) if peers.pfind() else ("find", [str(d), "-type", "f"]),
        "ior-easy-read": ("ior", [*easy, "-r", "-R"]),
        "mdtest-easy-stat": ("mdtest", [*md_easy, "-T"]),
        "ior-hard-read": ("ior", [*hard, "-r", "-R"]),
        "mdtest-hard-stat": ("mdtest", [*md_hard, "-T"]),
        "mdtest-easy-delete": ("mdtest", [*md_easy, "-r"]),
        "mdtest-hard-read": ("mdtest", [*md_hard, "-E", "-X"]),
        "mdtest-hard-delete": ("mdtest", [*md_hard, "-r"]),
    }


def io5_bytes(size: str) -> int:
    from fsbench.toolkit.sizes import parse_size

    return parse_size(size)


MD_PHASE_LINE = {"write": "File creation", "stat": "File stat", "read": "File read", "delete": "File removal"}


def io500_peer_phase(bin_dir: Path, d: Path, phase: str, io5: dict, ranks: int = RANKS) -> float:
    """The peer's value of one phase on its folder `d`, in IO500's units (GiB/s, kIOPS); no cache dropped, as
    neither io500 (drop-caches false, its default) nor fsbench's io500 phases then drop one."""
    tool, args = io500_peer_commands(d, io5)[phase]
    return peer_value(bin_dir, tool, args, phase, ranks)


def peer_value(bin_dir: Path, tool: str, args: list[str], phase: str, ranks: int = RANKS) -> float:
    """What the peer `tool` run with `args` reports for IO500's `phase`, in IO500's units."""
    if tool == "pfind":
        out = mpirun(bin_dir, "pfind", args, ranks)
        return float(re.search(r"rate: ([0-9.]+) kiops", out).group(1))
    if tool == "find":
        t0 = time.perf_counter()
        out = subprocess.run(["find", *args], capture_output=True, text=True, check=True).stdout
        return len(out.splitlines()) / (time.perf_counter() - t0) / 1e3
    if tool == "ior":
        out = mpirun(bin_dir, "ior", args, ranks)
        op = "write" if phase.endswith("write") else "read"
        summary = out.split("Summary of all tests:")[-1].splitlines()
        return next(float(f[1]) for x in summary if (f := x.split()) and f[0] == op) / 1024
    out = mpirun(bin_dir, "mdtest", args, ranks)
    name = MD_PHASE_LINE[phase.rsplit("-", 1)[1]]
    line = next(x for x in out.splitlines() if x.strip().startswith(name))
    return float(line.split()[2]) / 1e3


# IO500's phases before its first read, in its order (the timestamp: find's -newer)
IO500_WRITES = ["ior-easy-write", "mdtest-easy-write", "timestamp", "ior-hard-write", "mdtest-hard-write"]


def io500_writes(bin_dir: Path, d: Path, io5: dict, *fsbench_phases) -> None:
    """IO500's write phases once, phase by phase: by each of fsbench's (io500_fsbench's phase functions) and by the
    peer on its folder `d`; what the read, stat and find phases after them act on."""
    commands = io500_peer_commands(d, io5)
    for p in IO500_WRITES:
        for phase in fsbench_phases:
            phase(p)
        if p in commands:
            io500_peer_phase(bin_dir, d, p, io5)


@contextlib.contextmanager
def io500_peer_folder(top: Path):
    """A peer's data folder, top/data (ior-easy, ior-hard made ahead, as io500.sh does), and pfind's timestamp file
    beside it, made before the first phase as io500 makes its timestampfile; all removed after. One folder below
    `top`, so that the peer's files lie as deep below the storage's root as fsbench's (io500_fsbench:
    fsbench-io500/fsbench-peers-p-io500/) and the io500 application's (app_ini: <who>/data/): every call on a
    file resolves its path, and on CephFS one folder more costs ~10 % of a stat (docs/bench-peers.md, session 19)."""
    shutil.rmtree(top, ignore_errors=True)
    d = top / "data"
    for sub in ("ior-easy", "ior-hard"):
        (d / sub).mkdir(parents=True)
    Path(f"{d}-timestamp").touch()
    try:
        yield d
    finally:
        shutil.rmtree(top, ignore_errors=True)


@contextlib.contextmanager
def io500_fsbench(root: Path, io5: dict):
    """fsbench's io500 phases on a path array at `root`, one call per phase: each runs
    fsbench.io500.launch.phase_step, what the workflow's io500 rules run (scripts/io500.py), on the cell the
    workflow's plan makes of the same campaign, each phase given the record of the one before."""
    work = Path(tempfile.mkdtemp(prefix="fsbench-bench-peers-io500-", dir="/var/tmp"))
    data = root / "fsbench-io500"
    data.mkdir()
    config = {
        "campaign": "peers",
        "scratch": str(work / "scratch"),
        "arrays": {"p": {"kind": "path", "path": str(data)}},
        "io": {"size": "4MiB", "block_sizes": ["1MiB"], "repeats": 1},
        "history": False,
        "io500": io5,
    }
    campaign = validate(config)
    (place,) = io500_places(campaign)
    cell = CellSpec.from_params(Plan(campaign).cell_spec(*place, "io500", 1))
    before = {}

    def phase(name: str) -> dict:
        nonlocal before
        before = phase_step(cell, name, before, campaign["hosts"] or [], work / "records")
        return before

    try:
        yield phase
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(data, ignore_errors=True)


def io500_round(bin_dir: Path, root: Path, turns: tuple, io5: dict) -> dict:
    """{phase: {who: figure}} of IO500's twelve phases, phase by phase: each phase runs fsbench's, the peer's and
    the peer's again (in the round's turns) before the next phase, so that they meet the storage in one state."""
    got = {}
    with (
        io500_fsbench(root, io5) as fsbench_phase,
        io500_peer_folder(root / "peer-io500") as peer,
        io500_peer_folder(root / "peer-again-io500") as again,
    ):
        compared = io500_peer_commands(root, io5)
        for phase in ph500.PHASES:
            if phase == "ior-rnd4K-easy-read":  # no peer command here (the io500-app rows hold it), and it reads
                continue  # on until the stonewall, 300 s at these tunables
            if phase not in compared:  # the timestamp: find needs it
                fsbench_phase(phase)
                continue
            got[phase] = {}
            for who in turns:
                if who == "fsbench":
                    got[phase][who] = fsbench_phase(phase)["value"]
                else:
                    got[phase][who] = io500_peer_phase(bin_dir, peer if who == "peer" else again, phase, io5)
    return got


def io500_phases(io5: dict) -> list:
    cmds = io500_peer_commands(Path("DIR"), io5)
    found = []
    for phase in [p for p in ph500.PHASES if p in cmds]:
        tool, args = cmds[phase]
        goal = IO_GOAL if phase.startswith("ior-") else MD_GOAL
        cmd = shlex.join([tool, *args]) + (" | wc -l" if tool == "find" else "")
        found.append(Phase(f"io500 {phase}", ph500.unit(phase), goal, f"io500 campaign, phase {phase}", cmd))
    return found


# --- rounds ----------------------------------------------------------------------------------------


# --- the io500 application itself against fsbench's io500 campaign (issue 37 item 6) ----------------------

# At least 5 rounds: the whole run of each (every phase in order), fsbench, io500 and io500 again in turns.
APP_ROUNDS = 1 if SMOKE else int(os.environ.get("IO500_APP_ROUNDS", "5"))
APP_ROWS = [p for p in ph500.PHASES if p != "timestamp"] + ["bw", "md", "score"]
# The stonewall-time of both: io500's ior-rnd4K-easy-read reads on until it (300 s, the list's, would be 300 s a run).
APP_STONEWALL = 1 if SMOKE else int(os.environ.get("IO500_APP_STONEWALL", "10"))
APP_GOAL = (0.9, 1.1)


def app_ini(d: Path, io5: dict) -> str:
    """io500's ini of the same settings as fsbench's campaign `io5` (io500's defaults for the rest: drop-caches
    false, dataPacketType timestamp), its data and results under `d`."""
    return "\n".join(
        [
            "[global]",
            f"datadir = {d / 'data'}",
            "timestamp-datadir = FALSE",
            f"resultdir = {d / 'results'}",
            "timestamp-resultdir = FALSE",
            "[debug]",
            f"stonewall-time = {io5['stonewall-time']}",
            "[ior-easy]",
            f"transferSize = {io5_bytes(io5['ior-easy']['transferSize'])}",
            f"blockSize = {io5_bytes(io5['ior-easy']['blockSize'])}",
            "[ior-hard]",
            f"segmentCount = {io5['ior-hard']['segmentCount']}",
            "[mdtest-easy]",
            f"n = {io5['mdtest-easy']['n']}",
            "[mdtest-hard]",
            f"n = {io5['mdtest-hard']['n']}",
            "",
        ]
    )


def io500_app(exe: Path, d: Path, io5: dict) -> dict:
    """{row: value} of one run of the io500 application (`mpirun -np 2 ./io500 <ini>`) in folder `d`, read
    from its result_summary.txt."""
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    try:
        ini = d / "config.ini"
        ini.write_text(app_ini(d, io5))
        argv = [*peers.mpirun(RANKS), str(exe), str(ini)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=os.environ | peers.MPI_ENV, timeout=7200)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stdout[-2000:]}")
        found = read_summary((d / "results" / "result_summary.txt").read_text())
    finally:
        shutil.rmtree(d, ignore_errors=True)
    score = found["score"]
    return (
        {p: r["value"] for p, r in found["phases"].items()}
        | {"bw": score["bw"], "md": score["md"]}
        | {"score": score["total"]}
    )


def app_fsbench(root: Path, io5: dict) -> dict:
    """{row: value} of fsbench's io500 campaign, every phase in order, as io500.csv holds them."""
    with io500_fsbench(root, io5) as phase:
        records = [phase(p) for p in ph500.PHASES]
    return io500_table(records).set_index("phase")["value"].to_dict()


def app_round(exe: Path, root: Path, turns: tuple, io5: dict) -> dict:
    """{row: {who: value}}: fsbench's campaign, the io500 application and the application again, in `turns`."""
    got = {}
    for who in turns:
        got[who] = app_fsbench(root, io5) if who == "fsbench" else io500_app(exe, root / who.replace(" ", "-"), io5)
    return {row: {who: got[who][row] for who in WHO} for row in APP_ROWS}


def app_phases(io5: dict) -> list:
    what = "fsbench's io500 campaign, every phase in io500's order (fsbench.io500.launch.phase_step), io500.csv's row"
    cmd = "mpirun --oversubscribe -np 2 ./io500 config.ini (io500 at 02091cf), its result_summary.txt"
    return [Phase(f"io500-app {row}", ph500.unit(row), APP_GOAL, what, cmd) for row in APP_ROWS]


def phases(sc: Scale) -> list[Phase]:
    found = []
    for op in ("write", "read"):
        what = "python engine, bytes / seconds_durable" if op == "write" else "python engine after drop_caches"
        cmd = "ior " + " ".join(ior_args(Path("DIR"), sc.size, op))
        cmd = f"{cmd} (after ior -w ... -k, sync, drop_caches)" if op == "read" else cmd
        each = f"{what}; 2 streams, O_DIRECT, 1 MiB, {format_size(sc.size)} each"
        found.append(Phase(op, "MB/s", IO_GOAL, each, cmd))
    for ph in metadata.METADATA_PHASES:
        cmd = "mdtest " + " ".join(mdtest_args(Path("DIR"), ph, sc.files))
        what = f"metadata run_phase('{ph}'), 2 x {sc.files} empty files"
        found.append(Phase(f"md {ph}", "files/s", MD_GOAL, what, cmd))
    return found + io500_phases(sc.io5) + (app_phases(sc.io5) if peers.io500_built() else [])


WHO = ("fsbench", "peer", "peer again")


def order(rnd: int) -> tuple:
    """Who runs when in round rnd: the three turns rotate, so that over every three rounds each of fsbench, the
    peer and the peer again runs first, second and third once (the storage may favour a turn: docs/bench-peers.md)."""
    k = rnd % len(WHO)
    return WHO[k:] + WHO[:k]


def one_round(bin_dir: Path, root: Path, turns: tuple, sc: Scale) -> dict:
    """{phase: {who: figure}} for one round on the filesystem at `root`, block I/O and metadata."""
    got = {}
    folders = {who: root / who.replace(" ", "-") for who in WHO}
    for d in folders.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
    # Block I/O: IOR runs write and read in one go, fsbench its write and read; side by side.
    results = {}
    for who in turns:
        drop_caches()
        d = folders[who]
        results[who] = fsbench_io(d, sc.size) if who == "fsbench" else ior(bin_dir, d, sc.size)
    for op in ("write", "read"):
        got[op] = {who: results[who][op] for who in WHO}
    # Metadata: one phase at a time, each tool's tree made by its own create, caches dropped before each.
    job = meta_job(folders["fsbench"], sc.files)
    metadata.make_trees(job)
    try:
        for ph in metadata.METADATA_PHASES:
            got[f"md {ph}"] = {}
            for who in turns:
                drop_caches()
                if who == "fsbench":
                    figure = metadata.run_phase(job, ph)
                    got[f"md {ph}"][who] = figure["ops"] / figure["seconds"]
                else:
                    got[f"md {ph}"][who] = mdtest(bin_dir, folders[who], ph, sc.files)
    finally:
        metadata.remove_trees(job)
        for d in folders.values():
            shutil.rmtree(d, ignore_errors=True)
    return got


def judged(bin_dir: Path, root: Path, sc: Scale) -> dict:
    """{phase: [{who: figure} per round]}."""
    figures = {}
    for rnd in range(ROUNDS):
        for phase, run in one_round(bin_dir, root, order(rnd), sc).items():
            figures.setdefault(phase, []).append(run)
        if rnd < IO500_ROUNDS:
            for phase, run in io500_round(bin_dir, root, order(rnd), sc.io5).items():
                figures.setdefault(f"io500 {phase}", []).append(run)
        if rnd < APP_ROUNDS and (exe := peers.io500_built()):
            for row, run in app_round(exe, root, order(rnd), sc.io5 | {"stonewall-time": APP_STONEWALL}).items():
                figures.setdefault(f"io500-app {row}", []).append(run)
        this_round = {p: runs[-1] for p, runs in figures.items() if len(runs) == rnd + 1}
        said = [
            f"{p} {r['fsbench'] / r['peer']:.2f} ({r['peer again'] / r['peer']:.2f})" for p, r in this_round.items()
        ]
        log(f"  round {rnd + 1}/{ROUNDS}, fsbench/peer (peer again/peer): " + ", ".join(said))
    return figures


# --- storage ----------------------------------------------------------------------------------------------


def fill(image: Path) -> None:
    """Every page of the image written once, before mkfs (which then must not discard: a discard punches the
    loop's image full of holes). A hole is a tmpfs page made at its first write, from memory this VM has just
    handed back to its host (free page reporting): measured, one fsync of 1 GiB then took 0.19-3.36 s, in fast
    and slow stretches, one CPU busy in the loop worker's memcpy; with every page made, 0.19-0.24 s."""
    chunk = bytes(64 * MiB)
    with open(image, "r+b") as f:
        for _ in range(os.fstat(f.fileno()).st_size // len(chunk)):
            f.write(chunk)


@contextlib.contextmanager
def ext4_ram():
    scratch = Path(tempfile.mkdtemp(prefix="fsbench-bench-peers-", dir="/dev/shm"))
    mnt = Path(tempfile.mkdtemp(prefix="fsbench-bench-peers-mnt-", dir="/var/tmp"))
    try:
        dev = devices.attach_loop_images(scratch / "images", 1, IMAGE)[0]
        fill(scratch / "images" / "member0.img")
        # fsbench's own mkfs on a loop array: inode tables and journal written now, not by ext4lazyinit in the
        # background while we measure; the pages fill() made kept (no discard)
        subprocess.run(devices.mkfs_argv("ext4", [], [dev], discard=False), check=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        yield (
            mnt,
            (
                f"ext4 on {dev} (a loop device with direct I/O over a {format_size(IMAGE)} image in /dev/shm, every "
                "page of it written before mkfs, which does not discard)"
            ),
        )
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        devices.release(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(mnt, ignore_errors=True)


@contextlib.contextmanager
def shared(fs: str):
    """The test cluster's shared filesystem (tools/slurm_local.py: a GlusterFS volume, or with fs="ceph" a CephFS),
    mounted through this host's own client; the cluster started here and stopped after, whatever happens."""
    import fcntl

    import cephfs_local
    import slurm_local

    base = Path(tempfile.mkdtemp(prefix=f"fsbench-bench-peers-{fs}-", dir="/var/tmp"))
    with open("/tmp/fsbench-slurm.lock", "a") as lock:
        log("waiting for /tmp/fsbench-slurm.lock (one local Slurm, and its shared filesystem, per machine)")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for attempt in range(60):  # a local Slurm started without the lock (older test fixtures): wait for it
                try:
                    slurm_local.start(base / "slurm", 2, base / "volume", fs=fs)
                    break
                except slurm_local.Unavailable as e:
                    if "another local Slurm runs" not in str(e) or attempt == 59:
                        raise
                    time.sleep(10)
            if fs == "ceph":
                what = (
                    f"CephFS {cephfs_local.FS} (one mon, one mgr, {cephfs_local.OSDS} OSDs on file-backed BlueStore on "
                    "this VM's root disk, /var/tmp, pools of one copy; one MDS), through this host's ceph-fuse "
                    "(its object cache off: tools/cephfs_local.py's test cluster)"
                )
            else:
                what = (
                    f"GlusterFS volume {slurm_local.VOLUME} (one brick on this VM's root disk, /var/tmp), through "
                    f"this host's FUSE client at {slurm_local.NET}.1 (tools/slurm_local.py's test cluster)"
                )
            yield base / "volume", what
        finally:
            slurm_local.stop(base / "slurm")
            shutil.rmtree(base, ignore_errors=True)


STORAGE = {
    "ext4-ram": ext4_ram,
    "glusterfs": lambda: shared("glusterfs"),
    "cephfs": lambda: shared("ceph"),
}


# --- report -----------------------------------------------------------------------------------------------

# Notes measured by hand stay in docs/bench-peers.md under this heading, dated: render() carries them over as they
# are and never writes them as this run's findings (which come from this run's table alone: findings()).
BY_HAND = "## Measured by hand"


def misses(results: dict) -> list[tuple[str, str, float, str]]:
    """(storage, phase, median fsbench/peer, verdict) of every row whose target this run missed."""
    found = []
    for storage, (_, figures, phase_list) in results.items():
        for ph in phase_list:
            runs = figures[ph.name]
            ratios = [r["fsbench"] / r["peer"] for r in runs]
            control = [r["peer again"] / r["peer"] for r in runs]
            said = verdict(ratios, control, ph.goal)
            if said != "met":
                found.append((storage, ph.name, statistics.median(ratios), said))
    return found


def unexplained(results: dict) -> list[tuple[str, str, float, str]]:
    """The misses the peer's own range does not explain (verdict plain "not met"): what fails make bench-peers."""
    return [m for m in misses(results) if m[3] == "not met"]


def findings(results: dict) -> list[str]:
    """This run's findings, each beside the figures of this run's table that support it."""
    lines = ["## Findings (this run's table)", ""]
    missed = misses(results)
    for storage, (what, _, phase_list) in results.items():
        if not phase_list:
            lines.append(f"- {storage}: {what}")
            continue
        mine = [m for m in missed if m[0] == storage]
        lines.append(f"- {storage}: {len(phase_list) - len(mine)} of {len(phase_list)} rows within target.")
        lines += [f"  - {phase}: fsbench/peer {ratio:.2f}, {said}" for _, phase, ratio, said in mine]
    left = unexplained(results)
    lines.append(
        f"- Misses the peer's own range does not explain: {len(left)}"
        + (f" ({'; '.join(f'{m[0]} {m[1]}' for m in left)}): make bench-peers exits 1." if left else ".")
    )
    return [*lines, ""]


def by_hand(doc: Path) -> list[str]:
    """The doc's dated notes measured by hand, as they are (from BY_HAND on)."""
    text = doc.read_text() if doc.exists() else ""
    return text[text.index(BY_HAND) :].rstrip("\n").split("\n") if BY_HAND in text else []


def carried(doc: Path, storage: str) -> list[str]:
    """The doc's section of a storage this run does not measure, as its own run wrote it (a table, dated), so that a
    run of one storage keeps the others' last tables; [] when the doc holds no table of it."""
    lines = doc.read_text().split("\n") if doc.exists() else []
    if f"## {storage}" not in lines:
        return []
    start = lines.index(f"## {storage}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    section = lines[start:end]
    if sum(line.startswith("| ") for line in section) <= 2:  # a heading row and its rule: nothing measured
        return []
    if not section[2].startswith("Measured "):  # written before sections were dated: the run's date is the doc's
        when = next((m[1] for line in lines if (m := re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d UTC) on ", line))), "")
        section[2] = f"Measured {when or 'on an earlier date'}. {section[2]}"
    return section


def rate_text(value: float, unit: str) -> str:
    if unit in ("GiB/s", "kIOPS", ""):  # IO500's own units, as io500.csv has them (the score has none)
        return f"{value:.3f} {unit}"
    return f"{value / 1e6:.0f} MB/s" if unit == "MB/s" else f"{value / 1e3:.1f}k files/s"


def verdict(ratios: list[float], control: list[float], goal: tuple[float, float]) -> str:
    """met: the median fsbench/peer within the goal. Else whether the peer, run again beside itself, missed the
    goal too (its own median outside it): then the storage, not fsbench, is what a tool cannot be held to."""
    low, high, ratio = *goal, statistics.median(ratios)
    if low <= ratio <= high:
        return "met"
    if not low <= statistics.median(control) <= high:
        return "not met; nor is the peer against itself"
    if min(control) <= ratio <= max(control):
        return f"not met; the peer against itself ranged as far ({min(control):.2f}–{max(control):.2f})"
    return "not met"


def io500_rounds_text() -> str:
    if IO500_ROUNDS >= ROUNDS:
        return "IO500's phases in every one"
    return f"IO500's phases in the first {IO500_ROUNDS}"


def render(results: dict, started: datetime, load: tuple, load_end: tuple, memory: str) -> str:
    host = f"{platform.node()}, {platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}"
    lines = [
        "# fsbench held against IOR and mdtest",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC on {host}; load average {load[0]:.2f} at the start, {load_end[0]:.2f} at the "
        "end. Absolute figures on a VM are noisy: the per-round ratios (each pair measured side by side) are what to "
        "read. `make bench-peers` "
        f"(benchmarks/peers.py): {ROUNDS} rounds ({io500_rounds_text()}); in each, every phase "
        "runs fsbench, the peer, and the peer again, side by side, their turns rotating from round to round. "
        "fsbench/peer per round, its median and range, both tools' medians beside it; and the peer held against "
        "itself (peer again/peer), which shows how far this storage lets one tool's figure move between two runs "
        "side by side. IOR and mdtest from hpc/ior "
        "at 5fcf0ba (IOR 4.1.0+dev) with Open MPI 4.1, 2 ranks (`mpirun --oversubscribe -np 2`), built by "
        "tools/peers.py. Caches dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before every run of either tool. "
        f"Memory: {memory}.",
        "",
    ]
    for storage, (what, figures, phase_list) in results.items():
        if storage not in STORAGES and (section := carried(REPO / "docs" / "bench-peers.md", storage)):
            lines += section
            continue
        lines += [f"## {storage}", "", f"Measured {started:%Y-%m-%d %H:%M} UTC. {what}" if figures else what, ""]
        lines.append("| phase | fsbench | peer | fsbench/peer | range | peer again/peer | range | target | met |")
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
        for ph in phase_list:
            runs = figures[ph.name]
            ratios = [r["fsbench"] / r["peer"] for r in runs]
            control = [r["peer again"] / r["peer"] for r in runs]
            medians = [rate_text(statistics.median(r[who] for r in runs), ph.unit) for who in ("fsbench", "peer")]
            cells = [ph.name, *medians]
            for x in (ratios, control):
                cells += [f"{statistics.median(x):.2f}", f"{min(x):.2f}–{max(x):.2f}"]
            cells += [f"{ph.goal[0]}–{ph.goal[1]}", verdict(ratios, control, ph.goal)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += findings(results)
    lines += ["## Commands", ""]
    for storage, sc in SCALES.items():
        lines += [f"{storage}:", "", "| phase | fsbench | peer |", "| --- | --- | --- |"]
        lines += [f"| {ph.name} | {ph.fsbench} | `{ph.peer}` |" for ph in phases(sc)]
        lines += ["", f"{storage}'s io500 campaign: `io500: {json.dumps(sc.io5)}` on a path array at the storage.", ""]
    lines += [
        "Each fsbench io500 phase is "
        "fsbench.io500.launch.phase_step, what the workflow's io500 rules run, on the cell its plan makes of that "
        "campaign, and its value is the one io500.csv would hold. Both tools run the phases in IO500's order with "
        "io500's defaults: no cache dropped (drop-caches false), mdtest -Y after the write phases, the data checked "
        "on the reads (ior -R, mdtest -X). "
        "Side by side phase by phase: each phase runs fsbench's, the peer's and the peer's again (in the round's "
        "turns) before the next, so that they meet the storage in one state. "
        + (
            "find's peer is IO500's pfind (VI4IO/pfind at aaba722, IO500's own find) over the peer's whole data "
            "folder, 2 ranks, its `rate` (files scanned over its time)."
            if peers.pfind()
            else "find's peer is one GNU find over the peer's whole data folder, timed around the process "
            "(pfind's tarball was not found: tools/peers.py)."
        ),
        "",
        f"The io500-app rows hold fsbench's whole io500 campaign (every phase in io500's order, io500.csv's "
        f"figures, bw, md and score) against the io500 application itself (IO500/io500 at 02091cf, built by "
        f"tools/peers.py, `mpirun --oversubscribe -np 2 ./io500 config.ini` with the same settings and io500's "
        f"defaults: drop-caches false, dataPacketType timestamp; its result_summary.txt) and stonewall-time "
        f"{APP_STONEWALL} for both, {APP_ROUNDS} rounds, the turns of fsbench, io500 and io500 again rotating; the "
        "peer against itself is io500 again/io500.",
    ]
    if notes := by_hand(REPO / "docs" / "bench-peers.md"):
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def measure_all(bin_dir: Path) -> dict:
    """{storage: (what it is, its figures, its phases)} for every storage of STORAGES."""
    results = {}
    for storage in (s for s in SCALES if s not in STORAGES):  # the doc says so, not that it vanished
        kept = carried(REPO / "docs" / "bench-peers.md", storage)
        where = "its table above is its own last run's, as it was" if kept else "no earlier table of it in this doc"
        results[storage] = (f"Not run this time (STORAGES={','.join(STORAGES)}): {where}", {}, [])
    for storage in STORAGES:
        log(f"{storage}:")
        try:
            with STORAGE[storage]() as (root, what):
                results[storage] = (what, judged(bin_dir, root, SCALES[storage]), phases(SCALES[storage]))
        except Exception as e:  # noqa: BLE001 (the other storage's figures still count; the doc says why)
            why = f"{type(e).__name__}: {e}"
            log(f"{storage}: {why}")
            if storage in results:  # measured, then its clean-up failed: keep the figures, say so
                what, figures, phase_list = results[storage]
                results[storage] = (f"{what}. Its clean-up failed afterwards: {why}", figures, phase_list)
            else:
                results[storage] = (f"Not measured: {why}", {}, [])
    return {s: results[s] for s in SCALES}


def main() -> int:
    if os.geteuid() != 0:
        print("bench-peers attaches loop devices, mounts and drops caches: run it as root", file=sys.stderr)
        return 1
    started, load = datetime.now(UTC), os.getloadavg()
    bin_dir = peers.build(log=Path("/var/tmp/fsbench-peers-build.log"))
    find = peers.pfind(log=Path("/var/tmp/fsbench-peers-build.log")) or "GNU find"
    app = peers.io500(log=Path("/var/tmp/fsbench-peers-build.log")) or "not built: no tarball"
    log(f"the io500 application: {app} ({APP_ROUNDS} round(s) against fsbench's io500 campaign)")
    log(f"IOR and mdtest in {bin_dir}; find's peer: {find}")
    with memory_kept() as memory:
        log(memory)
        results = measure_all(bin_dir)
    text = render(results, started, load, os.getloadavg(), memory)
    print(text)
    if SMOKE:
        log("SMOKE=1: nothing written to docs/")
        return 0
    out = REPO / "docs" / "bench-peers.md"
    out.write_text(text)
    log(f"written to {out.relative_to(REPO)}")
    if left := unexplained(results):  # a miss the peer against itself does not explain is fsbench's to answer
        log(f"{len(left)} miss(es) the peer's own range does not explain: {[m[:2] for m in left]}")
        return 1
    return 0


if __name__ == "__main__":
    exit_on_sigterm()  # a killed benchmark releases its devices
    t0 = time.time()
    code = main()
    log(f"took {time.time() - t0:.0f} s")
    sys.exit(code)
