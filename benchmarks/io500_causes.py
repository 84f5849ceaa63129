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

    sudo .venv/bin/python benchmarks/io500_causes.py [ROUNDS [TIMES]]
        (6 rounds by default; TIMES multiplies bench-peers' mdtest-easy and mdtest-hard n, 1 by default;
         root: a loop device, a mount)

`per-file [ROUNDS]`: what one file of mdtest-hard-read costs each side, away from the phase around it. mdtest
makes FEW + MANY files as io500's mdtest-hard-write (one process, -Y); then in each round, the order alternated,
mdtest reads the first FEW and all of them as io500's mdtest-hard-read (-E -X), and fsbench's file loop does the
same calls (loops.c "mdtest-read", checking every word; the files hold mdtest's pattern, so every
check finds a difference, at the same cost) in a process of its own, pinned as the io500 processes are. Per
file, from the difference of the two counts (start-up and warm-up cancel): the wall time, and the user and
system CPU of the whole process tree (mpirun's too). mdtest twice: under mpirun, and alone (MPI's singleton)
pinned to the CPU fsbench's loop runs on, without mpirun's processes.

    sudo .venv/bin/python benchmarks/io500_causes.py per-file [ROUNDS]   (6 rounds by default)
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
WRITES = ["ior-easy-write", "mdtest-easy-write", "timestamp", "ior-hard-write", "mdtest-hard-write"]
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


def main(rounds: int, times: int) -> None:
    io5, bin_dir = copy.deepcopy(bench.SCALES["ext4-ram"].io5), bench.peers.build()
    for family in ("mdtest-easy", "mdtest-hard"):
        io5[family]["n"] *= times
    text = loops.SOURCE.read_text()
    assert all(text.count(a) == 1 for a in AS_MDTEST), "loops.c's file read is no longer where this script changes it"
    work = Path(tempfile.mkdtemp(prefix="fsbench-io500-causes-"))
    variant = work / "loops.c"
    variant.write_text(text.replace(AS_MDTEST[0], READ_ONLY[0]).replace(AS_MDTEST[1], READ_ONLY[1]))
    got = {(p, t): [] for p in PHASES for t in TURNS}
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        root, what = stack.enter_context(bench.ext4_ram())
        print(what, "mdtest-easy n", io5["mdtest-easy"]["n"], "mdtest-hard n", io5["mdtest-hard"]["n"], flush=True)
        deep = root / "d1" / "d2"
        deep.mkdir(parents=True)
        with (
            bench.io500_fsbench(root, io5) as phase,
            bench.io500_fsbench(deep, io5) as deep_phase,
            bench.io500_peer_folder(root / "peer-io500") as d,
        ):
            commands = bench.io500_peer_commands(d, io5)
            for p in WRITES:
                phase(p), deep_phase(p)
                if p in commands:
                    bench.io500_peer_phase(bin_dir, d, p, io5)
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
    print(f"\n| side | files/s, {FEW:,} files | files/s, {FEW + MANY:,} | per file, the {MANY:,} more: files/s |"
          " user µs | system µs |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for side in sides:
        few, many = got[(side, FEW)], got[(side, FEW + MANY)]
        per = [[(b[k] - a[k]) / MANY for a, b in zip(few, many, strict=True)] for k in range(3)]
        cells = [f"{statistics.median(FEW / a[0] for a in few):,.0f}"]
        cells.append(f"{statistics.median((FEW + MANY) / b[0] for b in many):,.0f}")
        cells.append(f"{1 / statistics.median(per[0]):,.0f}")
        cells += [f"{statistics.median(x) * 1e6:.2f} ({min(x) * 1e6:.2f}–{max(x) * 1e6:.2f})" for x in per[1:]]
        print(f"| {side} | " + " | ".join(cells) + " |")
    print(f"(medians of {rounds} rounds, turns rotating; CPU: the process tree's, mpirun's too)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["per-file"]:
        per_file(*(int(a) for a in sys.argv[2:3]), *(6,)[len(sys.argv[2:3]) :])
    else:
        main(*(int(a) for a in sys.argv[1:3]), *(6, 1)[len(sys.argv[1:3]) :])
