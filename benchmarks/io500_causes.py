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
"""

import contextlib
import copy
import importlib.util
import shutil
import statistics
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


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]), *(6, 1)[len(sys.argv[1:3]) :])
