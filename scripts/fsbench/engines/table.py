"""The engines in one table, in the manner of fio's ioengine ops: per engine its ops (write, read, and mixed where
it can mix), what it cannot do (its capabilities, in the words a user reads when refused) and the version of its
method. The campaign is checked against the table before any device is touched, and every measurement is dispatched
through it (`run`), which refuses a job the engine cannot run with the same words.

`method` is the version of how an engine measures. Bump it on purpose when a change to the engine changes what
its figures mean or how they come about: it enters the Snakemake params of exactly the cells that engine measures
(only above 1, so that campaigns measured at version 1 keep the params they had), and those are measured again.
`ring_method`, where set, is the version of its cells at iodepth > 1 alone (their io_uring path changed apart);
a change to both paths bumps both.
Any other change to fsbench's code re-measures nothing (profiles: rerun-triggers without "code").
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from fsbench.engines import dd, fio, mixed, python
from fsbench.engines.job import SIZE, TIME_OR_SIZE, Job

# What a test may need of an engine.
RAND = "rand"  # blocks in a random order
MIXED = "mixed"  # reads and writes in one run (patterns randrw, rw)
DEPTH = "iodepth"  # more than one I/O in flight per stream
RUNTIME = "runtime"  # stop at a time (io.runtime)
RUNTIME_RAND_WRITE = "runtime rand write"  # a random write stopped by the time, then read back exactly
SHARED = "shared_file"  # several streams interleaving blocks in one file
SHARED_RAND = "shared_file rand"  # ... in a random order
LATENCY = "latency"  # a time per operation
TIMESERIES = "timeseries"  # what completed when (bytes and operations per interval)
HUGEPAGE = "hugepage buffers"  # io.buffer: hugepage
VERIFY = "verify"  # every block read back checked against what was written (io.verify)


@dataclass(frozen=True)
class Engine:
    """An engine: its ops, each moving a Job's bytes timed and returning job.aggregate()'s shape (bytes, seconds,
    seconds_durable, started_at, ops, latency columns, command, streams; mixed: {"read": that, "write": that});
    what it cannot do, and why not; its method version."""

    ops: dict[str, Callable]
    cannot: dict[str, str] = field(default_factory=dict)
    method: int = 1
    ring_method: int | None = None  # its method at iodepth > 1, where that path changed apart from depth 1

    def method_at(self, iodepth: int) -> int:
        return self.ring_method if iodepth > 1 and self.ring_method else self.method


# config io.engine: its schema lists the same names (tests/test_config.py).
ENGINES = {
    "python": Engine(
        {"write": python.write, "read": python.read, "mixed": mixed.run},
        method=3,  # see METHOD_HISTORY
        ring_method=4,
    ),
    "dd": Engine(
        {"write": dd.write, "read": dd.read},
        {
            RAND: "dd cannot seek at random",
            MIXED: "dd cannot mix reads and writes",
            DEPTH: "dd has one request in flight",
            RUNTIME: "dd stops only at its count",
            RUNTIME_RAND_WRITE: "dd stops only at its count",
            SHARED: "dd writes one run of blocks, it cannot interleave",
            SHARED_RAND: "dd writes one run of blocks, it cannot interleave",
            LATENCY: "dd reports no per-call times",
            TIMESERIES: "dd reports nothing until it ends",
            HUGEPAGE: "dd's buffers are its own",
            VERIFY: "dd cannot check what it reads",
        },
    ),
    "fio": Engine(
        {"write": fio.write, "read": fio.read, "mixed": fio.mixed},
        {
            RUNTIME_RAND_WRITE: "fio's random writes cut short by the time leave blocks only fio knows, "
            "so no read could cover exactly them",
            SHARED_RAND: "fio interleaves blocks in a shared file only sequentially",
            HUGEPAGE: "fio's buffers are its own (its iomem option)",
            # fio's verify= checks inside its timed read, by a header of its own that fsbench's reads elsewhere
            # (another host, a mix) cannot check, and tells a bad block only in its error text
            VERIFY: "fio checks (verify=) inside its timed read and by a header of its own",
        },
    ),
}
# The metadata test (many small files) and IO500's phases are workloads of their own, whatever io.engine is.
# 2: the per-file loop in C, set up before the start line, each worker bound to a CPU as mpirun binds mdtest's
# ranks (cold stat ran at 0.6 of mdtest unbound, 1.0 bound): figures of version 1 are not comparable with them.
# metadata 3: an empty file's read is its open and close, as mdtest -E's without -e (a read call too held the
# phase to 0.83 of mdtest's). io500 3: find does IO500's find (names matching *01* stat'ed for size and age), not
# only the walk: without those stats its rate ran 1.8 x pfind's (docs/bench-peers.md).
# 4 (both): files named as mdtest names them (file.mdtest.<rank>.<i>). On ext4 a name's shape moves the rate: two
# processes made 20,000 empty files each at 102k/s named f<i> and 118k/s named as mdtest's (htree hash order).
# io500 4 also walks find's directories in C (loops.c's fsb_scan): Python's loop and fnmatch per name took about
# as long as the walk.
# io500 5: as the io500 application measures (issue 37): no cache drop unless drop-caches, stonewall-time 300 by
# default, the ior reads and mdtest-hard-read check the data, reads from io500's rank (IOR -C -Q 1, mdtest -N 1),
# the timestamp and ior-rnd4K-easy-read phases.
# io500 6: the ior phases' transfers in C (loops.c's fsb_ior), a timestamp packet of IOR's words, and IOR's check of
# each word read (ior -R, mdtest -X: verify_memory_pattern's loop): against the io500 application on a RAM ext4,
# fsbench's ior-easy-read ran at 2.08 x its own (a memcmp costs a third of IOR's check) and ior-rnd4K-easy-read at
# 0.69 (Python's ~2 us a transfer).
# io500 7: ior-rnd4K-easy-read as IOR's -z -z draws it: 4 KiB at random blocks of the file, with replacement, until
# the stonewall (up to io500's 10,000,000 a process), not each block once: on CephFS through ceph-fuse, whose open
# drops the file's pages, each block once read at 0.10 of the io500 application (which re-reads blocks it cached).
# io500 8: mdtest's files at mdtest's depth (test-dir.0-0/mdtest_tree.<rank>.0, test-dir.0-0/mdtest_tree.0), and
# mdtest-hard-read's calls as mdtest's (open O_RDWR, lseek, read): every call on a file resolves its path, and on
# CephFS an open for writing asks the MDS for write caps. On a RAM ext4 two folders more cost 2-6 %, the O_RDWR
# open and lseek ~7 % (benchmarks/io500_causes.py, docs/bench-peers.md).
METADATA_METHOD = 4
IO500_METHOD = 8


def why_not(engine: str, need: str) -> str | None:
    """Why `engine` cannot do `need`; None when it can."""
    return ENGINES[engine].cannot.get(need)


def able(need: str) -> str:
    """The engines that can: 'python or fio'."""
    return " or ".join(name for name, e in ENGINES.items() if need not in e.cannot)


def needs(
    pattern: str, iodepth=1, shared=False, op="write", ends=SIZE, counts: bool = False, verify: bool = False
) -> list[str]:
    """What a test needs of an engine; `ends`: what ends its run (Job.ends); `counts`: it reads what a time-based
    write moved (Job.counts), which counts as the time. A random write the time may end must be read back exactly.
    `verify`: its blocks are stamped and checked (io.verify)."""
    found = [RAND] if "rand" in pattern else []
    found += [MIXED] if pattern in ("randrw", "rw") or op == "mixed" else []
    found += [DEPTH] if iodepth > 1 else []
    found += [RUNTIME] if ends != SIZE or counts else []
    found += [RUNTIME_RAND_WRITE] if ends == TIME_OR_SIZE and pattern == "rand" else []
    found += [SHARED] if shared else []
    found += [SHARED_RAND] if shared and pattern != "seq" else []
    found += [VERIFY] if verify else []
    return found


def refuse(engine: str, wanted: list[str]) -> None:
    """ValueError naming the first of `wanted` that `engine` cannot do, and which engines can."""
    for need in wanted:
        if why := why_not(engine, need):
            raise ValueError(f"{engine} engine: {why}; use engine {able(need)}")


# What each method version changed, by workload (method_workload: an engine, its path at iodepth > 1 where that has
# a version of its own, metadata or io500): what a run says when a finished campaign's cells hold an older version
# than the code's (campaign.plan.Plan.older). Add a line with each bump.
METHOD_HISTORY = {
    "python": {
        2: "each stream bound to a CPU of its own, as IOR's ranks are",
        3: "buffers in 4 KiB pages as fio's and IOR's, not huge pages (io.buffer)",
    },
    "python at iodepth > 1": {
        2: "each stream bound to a CPU of its own, as IOR's ranks are",
        3: "each I/O submitted as soon as it is queued, as fio does",
        4: "buffers in 4 KiB pages as fio's and IOR's, not huge pages (io.buffer)",
    },
    "metadata": {
        2: "the per-file loop in C, each worker bound to a CPU as mpirun binds mdtest's ranks",
        3: "an empty file's read is its open and close, as mdtest -E's",
        4: "files named as mdtest names them (file.mdtest.<rank>.<i>)",
    },
    "io500": {
        2: "the per-file loop in C, each process bound to a CPU",
        3: "find stats the names matching *01* for size and age, as IO500's find",
        4: "files named as mdtest names them; find walks its directories in C",
        5: "as the io500 application measures: no cache drop unless drop-caches, data checks, io500's read-from rank",
        6: "the ior transfers in C, IOR's timestamp words and IOR's check of every word read (ior -R, mdtest -X)",
        7: "ior-rnd4K-easy-read at random 4 KiB blocks drawn with replacement until the stonewall, as IOR -z -z",
        8: "mdtest's files at mdtest's depth (test-dir.0-0/mdtest_tree.<rank>.0, test-dir.0-0/mdtest_tree.0); "
        "mdtest-hard-read opens O_RDWR and seeks, as mdtest's read",
    },
}


def method_workload(engine: str, iodepth: int = 1) -> str:
    """What a method version belongs to: the engine, or its path at iodepth > 1 where that is versioned apart."""
    ring = engine in ENGINES and iodepth > 1 and ENGINES[engine].ring_method
    return f"{engine} at iodepth > 1" if ring else engine


def method_version(engine: str, iodepth: int = 1) -> int:
    """The code's method version for an engine (at `iodepth`), the metadata test or io500."""
    return {"metadata": METADATA_METHOD, "io500": IO500_METHOD}.get(engine) or ENGINES[engine].method_at(iodepth)


def method_params(engine: str, iodepth: int = 1, version: int | None = None) -> dict:
    """The method version (the code's, or `version` where a finished cell keeps its own) as a Snakemake param:
    {} at version 1, so that a campaign's params stay as they were."""
    version = version or method_version(engine, iodepth)
    return {"method": version} if version > 1 else {}


def method_changes(workload: str, old: int, new: int) -> str:
    """What changed from version `old` to `new` of a workload's method (METHOD_HISTORY)."""
    said = METHOD_HISTORY.get(workload, {})
    return "; ".join(f"{v}: {said[v]}" for v in range(old + 1, new + 1) if v in said) or "no change recorded"


def run(name: str, op: str, job: Job, rwmix_read: int | None = None) -> dict:
    """`op` (write, read, or mixed with `rwmix_read` % reads) of `job` with engine `name`, refused first where the
    engine cannot run it (a read after a time-based write counts its blocks as a time would)."""
    refuse(name, needs(job.pattern, job.iodepth, job.slots > 1, op, job.ends(op), bool(job.counts), bool(job.verify)))
    ops = ENGINES[name].ops
    return ops[op](job) if op != "mixed" else ops[op](job, rwmix_read)
