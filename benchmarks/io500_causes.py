"""By hand (docs/bench-peers.md, "Measured by hand"): what makes fsbench's metadata stat and read phases faster
than mdtest's on IO500's files (issue 37): the depth of the files' folder, or how mdtest opens a file to read it.

Until io500 method 8 mdtest's files lay two folders deeper than fsbench's (mdt_hard/test-dir.0-0/mdtest_tree.0/
against mdtest-hard/), and mdtest's read opened each file O_RDWR and seeked before its read (strace), where
fsbench opened it O_RDONLY; since method 8 fsbench does both as mdtest does.
On bench-peers' RAM-backed ext4 at its sizes, IO500's write phases once for each of: fsbench as it is, fsbench
two folders deeper (its path array at d1/d2), and the peer as io500 runs it; then ROUNDS rounds of
mdtest-easy-stat, mdtest-hard-stat and mdtest-hard-read, each round every turn once in a rotated order: fsbench,
fsbench deeper, fsbench opening O_RDONLY without the lseek as before method 8 (loops.c built so: reads only),
mdtest. Prints each variant over fsbench and over mdtest (medians of the rounds, and ranges).

    sudo .venv/bin/python benchmarks/io500_causes.py [ROUNDS [TIMES [STORAGE]]]
        (6 rounds by default; TIMES multiplies bench-peers' mdtest-easy and mdtest-hard n, 1 by default;
         STORAGE: bench-peers' ext4-ram (the default), cephfs or glusterfs, at its sizes; root: a loop device,
         a mount)

`per-file [ROUNDS]`: what one file of mdtest-hard-read costs each side, away from the phase around it. mdtest
makes FEW + MANY files as io500's mdtest-hard-write (one process, -Y); then in each round, the order alternated,
mdtest reads the first FEW and all of them as io500's mdtest-hard-read (-E -X), and fsbench's file loop does the
same calls (loops.c "mdtest-read", checking every word; the files hold mdtest's pattern, so every
check finds a difference, at the same cost) in a process of its own, pinned as the io500 processes are. Per
file, from the difference of the two counts (start-up and warm-up cancel): the wall time, and the user and
system CPU of the whole process tree (mpirun's too). mdtest twice: under mpirun, and alone (MPI's singleton)
pinned to the CPU fsbench's loop runs on, without mpirun's processes.

    sudo .venv/bin/python benchmarks/io500_causes.py per-file [ROUNDS]   (6 rounds by default)

`per-transfer [ROUNDS]`: the same for one transfer of ior-rnd4K-easy-read (4 KiB at random blocks of ior-easy's
file, from the page cache) and of ior-hard-write (47,008 bytes into the shared file, its fsync at the end): IOR as
io500 runs it for one process, under mpirun and alone, against fsbench's transfer loop (loops.c fsb_ior), and for
the read also fsbench's loop built to do per transfer what IOR does (lseek, then read; two clock reads).

    sudo .venv/bin/python benchmarks/io500_causes.py per-transfer [ROUNDS]   (6 rounds by default)

`find STORAGE [ROUNDS]`: IO500's find on bench-peers' STORAGE (ext4-ram, cephfs, glusterfs) at its sizes, by
fsbench, by fsbench stating each name found by its whole path as pfind does, by pfind as io500 runs it (bench-peers'
2 processes) and by pfind in one process.

    sudo .venv/bin/python benchmarks/io500_causes.py find STORAGE [ROUNDS]   (6 rounds by default)
"""

import contextlib
import copy
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
spec = importlib.util.spec_from_file_location("bench_peers", REPO / "benchmarks" / "peers.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
from fsbench.engines import loops  # noqa: E402 (after bench_peers put the package on the path)

PHASES = ["mdtest-easy-stat", "mdtest-hard-stat", "mdtest-hard-read"]
TURNS = ["fsbench", "deeper", "rdonly", "mdtest"]
PAIRS = [
    ("fsbench", "mdtest"),
    ("deeper", "fsbench"),
    ("deeper", "mdtest"),
    ("rdonly", "fsbench"),
    ("rdonly", "mdtest"),
]
# io500's mdtest-hard-read opens as mdtest does since io500 method 8 (O_RDWR, then lseek); the variant as before it
AS_MDTEST = ("(f->op == 4 ? O_RDWR : O_RDONLY)", "if (f->op == 4 && lseek(")
READ_ONLY = ("O_RDONLY", "if (0 && lseek(")


def loops_variant(folder: Path, *swaps: tuple[str, str]) -> Path:
    """loops.c with each (old, new) of `swaps` made, written into `folder`; each old text must be there once, else
    loops.c has moved on from what this script changes."""
    text = loops.SOURCE.read_text()
    for old, new in swaps:
        assert text.count(old) == 1, f"loops.c no longer holds {old!r} once: this script changes it there"
        text = text.replace(old, new)
    variant = folder / "loops.c"
    variant.write_text(text)
    return variant


@contextlib.contextmanager
def loaded(variant: Path):
    """loops.c's `variant` loaded for this turn (the forked processes inherit it); the library as it was after."""
    source, lib = loops.SOURCE, loops._lib
    loops.SOURCE, loops._lib = variant, None
    try:
        loops.load()
        yield
    finally:
        loops.SOURCE, loops._lib = source, lib


def main(rounds: int, times: int, storage: str = "ext4-ram") -> None:
    io5, bin_dir = copy.deepcopy(bench.SCALES[storage].io5), bench.peers.build()
    for family in ("mdtest-easy", "mdtest-hard"):
        io5[family]["n"] *= times
    work = Path(tempfile.mkdtemp(prefix="fsbench-io500-causes-"))
    variant = loops_variant(work, *zip(AS_MDTEST, READ_ONLY, strict=True))
    got = {(p, t): [] for p in PHASES for t in TURNS}
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        root, what = stack.enter_context(bench.STORAGE[storage]())
        print(what, "mdtest-easy n", io5["mdtest-easy"]["n"], "mdtest-hard n", io5["mdtest-hard"]["n"], flush=True)
        deep = root / "d1" / "d2"
        deep.mkdir(parents=True)
        with (
            bench.io500_fsbench(root, io5) as phase,
            bench.io500_fsbench(deep, io5) as deep_phase,
            bench.io500_peer_folder(root / "peer-io500") as d,
        ):
            bench.io500_writes(bin_dir, d, io5, phase, deep_phase)
            for rnd in range(rounds):
                turns = TURNS[rnd % len(TURNS) :] + TURNS[: rnd % len(TURNS)]
                for p in PHASES:
                    for t in turns:
                        if t == "fsbench":
                            got[(p, t)].append(phase(p)["value"])
                        elif t == "deeper":
                            got[(p, t)].append(deep_phase(p)["value"])
                        elif t == "mdtest":
                            got[(p, t)].append(bench.io500_peer_phase(bin_dir, d, p, io5))
                        elif p == "mdtest-hard-read":
                            with loaded(variant):
                                got[(p, t)].append(phase(p)["value"])
                print(f"round {rnd + 1} of {rounds}", flush=True)
    head = ["phase", "fsbench", "mdtest", "fsbench/mdtest", "deeper/fsbench", "deeper/mdtest"]
    head += ["O_RDONLY/fsbench", "O_RDONLY/mdtest"]
    print("\n| " + " | ".join(head) + " |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for p in PHASES:
        fs, md = (statistics.median(got[(p, t)]) for t in ("fsbench", "mdtest"))
        cells = [p, f"{fs:.1f}", f"{md:.1f}"]
        for a, b in PAIRS:
            r = [x / y for x, y in zip(got[(p, a)], got[(p, b)], strict=False)]  # rdonly: reads only
            cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f})" if r else "–")
        print("| " + " | ".join(cells) + " |")
    print("(kIOPS, medians of the rounds; ratios: median (range) of the rounds' ratios)")


FEW, MANY = 10_000, 90_000
CPU = 1  # the CPU fsbench's loop and the pinned mdtest run on (io500's process 1 is bound to it on 2 CPUs)
# one process's mdtest-hard-read as fsbench's io500 processes run it: the C file loop, pinned, its wall time
LOOP = """
import os, sys, time
from fsbench.engines.loops import FileLoop
n, folder, cpu = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
os.sched_setaffinity(0, {cpu})
files = FileLoop("mdtest-read", folder, "file.mdtest.0.{i}", count=n, file_size=3901, expect=bytes(3901))
t0 = time.perf_counter()
files.run()
print(time.perf_counter() - t0)
"""


def timed(argv: list[str]) -> tuple[str, float, float]:
    """(stdout, user s, system s) of `argv` and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = os.environ | bench.peers.MPI_ENV | {"PYTHONPATH": str(REPO / "scripts")}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def per_file(rounds: int) -> None:
    bin_dir = bench.peers.build()
    with bench.ext4_ram() as (root, what):
        print(what, flush=True)
        io5 = copy.deepcopy(bench.SCALES["ext4-ram"].io5)
        io5["mdtest-hard"]["n"] = FEW + MANY
        commands = bench.io500_peer_commands(root, io5)
        mdtest = [str(bin_dir / "mdtest"), *commands["mdtest-hard-read"][1]]
        n_at = mdtest.index("-n") + 1
        subprocess.run(
            [*bench.peers.mpirun(1), str(bin_dir / "mdtest"), *commands["mdtest-hard-write"][1]],
            check=True, capture_output=True, env=os.environ | bench.peers.MPI_ENV,
        )  # fmt: skip
        folder = str(root / "mdt_hard" / "test-dir.0-0" / "mdtest_tree.0")

        def run(side: str, n: int, launch=()) -> tuple[float, float, float]:
            """(seconds, user s, system s) of `side` reading the first n files."""
            if side == "fsbench":
                out, user, system = timed([sys.executable, "-c", LOOP, str(n), folder, str(CPU)])
                return float(out), user, system
            argv = [*launch, *mdtest[:n_at], str(n), *mdtest[n_at + 1 :]]
            out, user, system = timed(argv)
            line = next(x for x in out.splitlines() if x.strip().startswith(bench.MD_PHASE_LINE["read"]))
            return n / float(line.split()[2]), user, system

        launch = {
            "mdtest under mpirun": bench.peers.mpirun(1),
            f"mdtest alone on CPU {CPU}": ["taskset", "-c", str(CPU)],
        }
        sides = [*launch, "fsbench"]
        got = {(side, n): [] for side in sides for n in (FEW, FEW + MANY)}
        for rnd in range(rounds):
            for n in (FEW, FEW + MANY):
                for side in sides[rnd % 3 :] + sides[: rnd % 3]:
                    got[(side, n)].append(run("fsbench" if side == "fsbench" else "mdtest", n, launch.get(side, ())))
            print(f"round {rnd + 1} of {rounds}", flush=True)
    print()
    per_item_table("file", FEW, FEW + MANY, {side: (got[(side, FEW)], got[(side, FEW + MANY)]) for side in sides})
    print(f"(medians of {rounds} rounds, turns rotating; CPU: the process tree's, mpirun's too)")


def per_item_table(item: str, few: int, many: int, runs: dict) -> None:
    """The table of what one more item costs each side: `runs` {side: (runs of `few` items, runs of `many`)}, each
    run (seconds, user s, system s); per item from the difference of the two counts, so that start-up and
    warm-up cancel."""
    more = many - few
    print(f"| side | {item}s/s, {few:,} | {item}s/s, {many:,} | per {item}, the {more:,} more: {item}s/s | user µs |"
          " system µs |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for side, (a_runs, b_runs) in runs.items():
        per = [[(b[k] - a[k]) / more for a, b in zip(a_runs, b_runs, strict=True)] for k in range(3)]
        cells = [f"{statistics.median(few / a[0] for a in a_runs):,.0f}"]
        cells.append(f"{statistics.median(many / b[0] for b in b_runs):,.0f}")
        cells.append(f"{1 / statistics.median(per[0]):,.0f}")
        cells += [f"{statistics.median(x) * 1e6:.2f} ({min(x) * 1e6:.2f}–{max(x) * 1e6:.2f})" for x in per[1:]]
        print(f"| {side} | " + " | ".join(cells) + " |")


# one process's ior phase as fsbench's io500 processes run it: the C transfer loop, pinned, a stonewall far off
# (its clock read each transfer, as in the phase), from open to close (the write's fsync too, as IOR -e)
IOR_LOOP = """
import os, sys, time
from pathlib import Path
from fsbench.engines import loops
from fsbench.engines.loops import IorLoop
from fsbench.io500 import phases as ph
phase, n, path, cpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if sys.argv[5:]:
    loops.SOURCE = Path(sys.argv[5])  # a variant of the loop
os.sched_setaffinity(0, {cpu})
t0 = time.perf_counter()
if phase == "ior-hard-write":
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    size = ph.IOR_HARD_TRANSFER
    loop = IorLoop(fd, True, 0, ph.packet("timestamp", 0, size), 0, size, timestamp=ph.timestamp_words(0))
else:
    fd = os.open(path, os.O_RDONLY)
    loop = IorLoop(fd, False, 0, bytes(ph.RND4K_BYTES), blocks=os.fstat(fd).st_size // ph.RND4K_BYTES, seed=0)
done = loop.run(0, n, time.monotonic_ns() + 300 * 10**9)
if phase == "ior-hard-write":
    os.fsync(fd)
os.close(fd)
print(time.perf_counter() - t0, done)
"""
# fsbench's ior read made to do per transfer what IOR does (aiori-POSIX.c's lseek64, then read; ior.c's two
# GetTimeStamp, gettimeofday: one before the call, one for the stonewall, where fsbench reads its clock once)
PREAD = "n = pread(p->fd, p->buf, p->transfer, off);"
AS_IOR = (
    "n = (gettimeofday(&(struct timeval){0}, NULL), lseek(p->fd, off, SEEK_SET) < 0 ? -1"
    " : read(p->fd, p->buf, p->transfer));"
)
AS_IOR_SIDE = "fsbench with IOR's calls"
# the transfers of the fewer and the more run of each phase; the more: ~0.5 s on bench-peers' RAM ext4
TRANSFERS = {"ior-rnd4K-easy-read": (50_000, 450_000), "ior-hard-write": (2_000, 18_000)}


def per_transfer(rounds: int) -> None:
    """What one transfer of ior-rnd4K-easy-read and of ior-hard-write costs each side, as per_file does for a file:
    IOR's arguments as io500 passes them for one process (rnd4K: -z -z, -D with its wear-out, a stonewall far
    off so that -s ends it), IOR's own time of the phase (its total(s): open to close)."""
    bin_dir = bench.peers.build()
    with tempfile.TemporaryDirectory(prefix="fsbench-io500-causes-") as work, bench.ext4_ram() as (root, what):
        print(what, flush=True)
        include = ("#include <sys/stat.h>", "#include <sys/stat.h>\n#include <sys/time.h>")
        variant = loops_variant(Path(work), include, (PREAD, AS_IOR))
        io5 = copy.deepcopy(bench.SCALES["ext4-ram"].io5)
        commands = bench.io500_peer_commands(root, io5)
        for folder in ("ior-easy", "ior-hard"):
            (root / folder).mkdir()
        subprocess.run(
            [*bench.peers.mpirun(1), str(bin_dir / "ior"), *commands["ior-easy-write"][1]],
            check=True, capture_output=True, env=os.environ | bench.peers.MPI_ENV,
        )  # fmt: skip
        easy = [a for a in commands["ior-easy-read"][1] if a != "-R"]  # io500 checks no rnd4K read
        for opt in ("-t", "-b"):
            easy[easy.index(opt) + 1] = str(4096)
        ior = {
            "ior-rnd4K-easy-read": [*easy, "-s", "{n}", "-D", "300", "-z", "-z", "-O", "stoneWallingWearOut=1"],
            "ior-hard-write": commands["ior-hard-write"][1],
        }
        i = ior["ior-hard-write"].index("-s") + 1
        ior["ior-hard-write"] = [*ior["ior-hard-write"][:i], "{n}", *ior["ior-hard-write"][i + 1 :]]
        path = {
            "ior-rnd4K-easy-read": root / "ior-easy" / "ior_file_easy.00000000",
            "ior-hard-write": root / "ior-hard" / "file",
        }

        def run(side: str, phase: str, n: int) -> tuple[float, float, float]:
            """(seconds, user s, system s) of `side`'s `phase` of n transfers."""
            if phase.endswith("write"):
                path[phase].unlink(missing_ok=True)
                os.sync()
            if side.startswith("fsbench"):
                more = [str(variant)] if side == AS_IOR_SIDE else []
                argv = [sys.executable, "-c", IOR_LOOP, phase, str(n), str(path[phase]), str(CPU), *more]
                out, user, system = timed(argv)
                seconds, done = out.split()
                assert int(done) == n, f"fsbench's {phase} did {done} transfers of {n}"
                return float(seconds), user, system
            args = [a.replace("{n}", str(n)) for a in ior[phase]]
            out, user, system = timed([*launch[side], str(bin_dir / "ior"), *args])
            op = "write" if phase.endswith("write") else "read"
            results = out.split("Summary of all tests:")[0].splitlines()
            return float(next(f[9] for x in results if (f := x.split()) and f[0] == op)), user, system

        launch = {
            "IOR under mpirun": bench.peers.mpirun(1),
            f"IOR alone on CPU {CPU}": ["taskset", "-c", str(CPU)],
        }
        sides = [*launch, "fsbench", AS_IOR_SIDE]
        got = {(side, p, n): [] for side in sides for p, ns in TRANSFERS.items() for n in ns}
        for rnd in range(rounds):
            for p, ns in TRANSFERS.items():
                for n in ns:
                    for side in sides[rnd % 4 :] + sides[: rnd % 4]:
                        if side == AS_IOR_SIDE and p.endswith("write"):
                            continue  # the variant changes reads only
                        got[(side, p, n)].append(run(side, p, n))
            print(f"round {rnd + 1} of {rounds}", flush=True)
    for p, (few, many) in TRANSFERS.items():
        print(f"\n{p}\n")
        runs = {side: (got[(side, p, few)], got[(side, p, many)]) for side in sides if got[(side, p, few)]}
        per_item_table("transfer", few, many, runs)
    print(f"(medians of {rounds} rounds, turns rotating; CPU: the process tree's, mpirun's too)")


# fsbench's find made to stat as pfind does (src/pfind.c find_do_lstat: lstat of the whole path, made by sprintf
# from the start folder), where fsbench's fstatat names the file in the folder it has open
FSTATAT = "if (!stated && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {"
AS_PFIND = (
    'char whole[PATH_MAX]; snprintf(whole, sizeof whole, "%s/%s", path, e->d_name);\n'
    "        if (!stated && lstat(whole, &st)) {"
)
FIND_TURNS = ["fsbench", "fsbench stating as pfind", "pfind", "pfind, one process"]


def find(storage: str, rounds: int) -> None:
    """What makes fsbench's find faster than pfind's on CephFS (1.55 in bench-peers' cephfs table): IO500's write
    phases once by fsbench and by the peer at bench-peers' sizes for `storage`, then ROUNDS rounds of find by
    fsbench, by fsbench stating each name found by its whole path as pfind does, by pfind (as io500 runs it) and
    by pfind in one process, turns rotating."""
    bin_dir = bench.peers.build()
    io5 = copy.deepcopy(bench.SCALES[storage].io5)
    got = {t: [] for t in FIND_TURNS}
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fsbench-io500-causes-")))
        variant = loops_variant(work, (FSTATAT, AS_PFIND))
        root, what = stack.enter_context(bench.STORAGE[storage]())
        print(what, flush=True)
        phase = stack.enter_context(bench.io500_fsbench(root, io5))
        d = stack.enter_context(bench.io500_peer_folder(root / "peer-io500"))
        bench.io500_writes(bin_dir, d, io5, phase)
        for rnd in range(rounds):
            for t in FIND_TURNS[rnd % 4 :] + FIND_TURNS[: rnd % 4]:
                if t.startswith("pfind"):
                    ranks = 1 if t == "pfind, one process" else bench.RANKS
                    got[t].append(bench.io500_peer_phase(bin_dir, d, "find", io5, ranks))
                elif t == "fsbench":
                    got[t].append(phase("find")["value"])
                else:
                    with loaded(variant):
                        got[t].append(phase("find")["value"])
            print(f"round {rnd + 1} of {rounds}: " + ", ".join(f"{t} {got[t][-1]:.1f}" for t in FIND_TURNS), flush=True)
    print("\n| turn | kIOPS | /pfind | /fsbench |\n| --- | ---: | ---: | ---: |")
    for t in FIND_TURNS:
        cells = [f"{statistics.median(got[t]):.1f}"]
        for base in ("pfind", "fsbench"):
            r = [x / y for x, y in zip(got[t], got[base], strict=True)]
            cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}–{max(r):.2f})")
        print(f"| {t} | " + " | ".join(cells) + " |")
    print(f"(medians of {rounds} rounds, turns rotating; ratios: median (range) of the rounds' ratios)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["find"]:
        find(sys.argv[2], *(int(a) for a in sys.argv[3:4]), *(6,)[len(sys.argv[3:4]) :])
    elif sys.argv[1:2] == ["per-file"]:
        per_file(*(int(a) for a in sys.argv[2:3]), *(6,)[len(sys.argv[2:3]) :])
    elif sys.argv[1:2] == ["per-transfer"]:
        per_transfer(*(int(a) for a in sys.argv[2:3]), *(6,)[len(sys.argv[2:3]) :])
    else:
        main(*(int(a) for a in sys.argv[1:3]), *(6, 1)[len(sys.argv[1:3]) :], *sys.argv[3:4])
