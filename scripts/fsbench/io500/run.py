"""IO500's phases as they run: one host's processes (part, a forked worker per process, all starting at one
moment), and a phase across every host at once (launch: the all-hosts launcher of fsbench.measurement.all_hosts,
srun under Slurm, else this host alone), as one record.

Layout under the target's io500 folder (root): ior-easy/file.<rank>, ior-hard/file (one shared file),
mdtest-easy/rank<rank>/file.mdtest.<rank>.<i> (a directory per process), mdtest-hard/file.mdtest.<rank>.<i> (one
shared directory; the files named as mdtest names them),
.timestamp (made before the first phase, as IO500's timestampfile: find looks for files newer than it),
and .sync/<phase>/ where the processes of a stonewalled write post how far each got (a file every host sees:
the target is the filesystem they share), then all write on to the furthest (IOR's wear-out).
"""

import ctypes
import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

from fsbench.cluster.hosts import short_hostname
from fsbench.engines.loops import FileLoop, Scanner, WrongSize
from fsbench.engines.loops import load as load_loops
from fsbench.io500 import phases as ph
from fsbench.storage import cache
from fsbench.storage.devices import DeviceError
from fsbench.toolkit import barrier
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.system import pin_to_cpu

_libc = ctypes.CDLL(None, use_errno=True)
POLL_S = 0.005  # how often a process that reached the stonewall looks for the others' counts
LOCAL_DELAY = 0.2  # seconds from forking this host's processes to their start


class Io500Error(DeviceError):
    """A phase that could not run as IO500 defines it (a short read, a file missing)."""


def layout(root: Path) -> dict[str, Path]:
    return {k: root / k for k in ("ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard", ".sync")}


def prepare(root: Path, nprocs: int) -> None:
    """The folders of every phase, made afresh (what an interrupted run left goes), untimed as IO500's are."""
    shutil.rmtree(root, ignore_errors=True)
    dirs = layout(root)
    for d in dirs.values():
        d.mkdir(parents=True)
    for r in range(nprocs):
        (dirs["mdtest-easy"] / f"rank{r}").mkdir()
    (dirs["ior-hard"] / "file").touch()
    timestamp(root).touch()


def timestamp(root: Path) -> Path:
    return root / ".timestamp"


def easy_file(root: Path, rank: int) -> Path:
    return root / "ior-easy" / f"file.{rank}"


def limit_of(spec: dict, phase: str) -> int:
    """Items per process a phase moves at most: transfers, segments or files."""
    io500 = spec["io500"]
    family = phase.rsplit("-", 1)[0]
    return {
        "ior-easy": io500["ior-easy"]["blockSize"] // io500["ior-easy"]["transferSize"],
        "ior-hard": io500["ior-hard"]["segmentCount"],
        "mdtest-easy": io500["mdtest-easy"]["n"],
        "mdtest-hard": io500["mdtest-hard"]["n"],
    }[family]


def item_bytes(spec: dict, phase: str) -> int:
    """Bytes per item: what an ior figure counts (an mdtest figure counts the items)."""
    if phase.startswith("ior-easy"):
        return spec["io500"]["ior-easy"]["transferSize"]
    if phase.startswith("ior-hard"):
        return ph.IOR_HARD_TRANSFER
    return ph.MDTEST_HARD_BYTES if phase.startswith("mdtest-hard") and phase.endswith(("write", "read")) else 0


def _syncfs(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), f"syncfs of {path}")
    finally:
        os.close(fd)


def _post_and_wait(sync: Path, rank: int, nprocs: int, done: int) -> list[int]:
    """Post how many items this rank made by the stonewall; wait until every rank (of every host) has."""
    tmp = sync / f".{rank}.tmp"
    tmp.write_text(str(done))
    tmp.rename(sync / str(rank))
    while True:
        names = [n for n in os.listdir(sync) if not n.startswith(".")]
        if len(names) >= nprocs:
            return [int((sync / n).read_text()) for n in names]
        time.sleep(POLL_S)


def _ops(spec: dict, phase: str, root: Path, rank: int, nprocs: int):
    """(open, run(first, last, deadline_ns), close(durable)) of one process in one phase: what it does around its
    items, and its items first..last-1, none started at or after deadline_ns (CLOCK_MONOTONIC; 0: none), which
    returns how many it did. The mdtest phases' items are loops.c's file loop, timed per file into
    `state["latency"]`."""
    shift = ph.read_shift(spec["io500"]["processes"], len(spec["hosts"]), spec["read_from"])
    other = ph.partner(rank, nprocs, shift)
    state = {}
    t = item_bytes(spec, phase)
    if phase.startswith("ior-"):
        write = phase.endswith("write")
        if phase.startswith("ior-easy"):
            path = easy_file(root, rank if write else other)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC if write else os.O_RDONLY
            where = lambda i: i * t  # noqa: E731
        else:
            path = root / "ior-hard" / "file"
            flags = os.O_WRONLY if write else os.O_RDONLY
            who = rank if write else other
            where = lambda i: ph.ior_hard_offset(who, i, nprocs)  # noqa: E731
        buf = bytearray(os.urandom(t)) if write else bytearray(t)

        def start():
            state["fd"] = os.open(path, flags, 0o644)

        if write:

            def item(i):
                if os.pwrite(state["fd"], buf, where(i)) != t:
                    raise Io500Error(f"{phase}: short write to {path}")

        else:
            view = memoryview(buf)

            def item(i):
                if os.preadv(state["fd"], [view], where(i)) != t:
                    raise Io500Error(f"{phase}: short read of {path} at {where(i)} (rank {rank} reads rank {other}'s)")

        def run(first, last, deadline_ns):
            i = first
            while i < last and not (deadline_ns and time.monotonic_ns() >= deadline_ns):
                item(i)
                i += 1
            return i - first

        def end(durable):
            if durable:
                os.fsync(state["fd"])
            os.close(state["fd"])

        return start, run, end, state
    whose = rank if phase.endswith("write") else other
    if phase.startswith("mdtest-easy"):
        folder, name = root / "mdtest-easy" / f"rank{whose}", ph.mdtest_name(whose, "{i}")
    else:
        folder, name = root / "mdtest-hard", ph.mdtest_name(whose, "{i}")
    op = {"write": "create", "stat": "stat", "read": "read", "delete": "delete"}[phase.rsplit("-", 1)[1]]
    size = ph.MDTEST_HARD_BYTES if phase.startswith("mdtest-hard") and op in ("create", "read") else 0
    files = FileLoop(op, folder, name, count=0, file_size=size, data=os.urandom(size))
    state["latency"] = files.hist

    def run(first, last, deadline_ns):
        try:
            return files.run(first, last, deadline_ns)
        except WrongSize as e:
            raise Io500Error(f"{phase}: {e}") from None

    def end(durable):
        if durable:
            _syncfs(root)

    return (lambda: None), run, end, state


def finder(newer_ns: int) -> Scanner:
    """IO500's find's scanner (set up before the start line: its buffer and the library's load are no walk)."""
    return Scanner(ph.FIND_NAME, ph.MDTEST_HARD_BYTES, newer_ns)


def _find(root: Path, rank: int, scanner: Scanner) -> tuple[int, int]:
    """fsbench's walker: this rank's share of the names (its own easy directory; rank 0 also the shared hard
    directory and the ior folders), a directory at a time in C (loops.c's fsb_scan). IO500's find: a file whose
    name matches FIND_NAME is stat'ed and found when it has mdtest-hard's size and is newer than the timestamp;
    the others are only counted (`scanner`: finder()). Like IO500's pfind, whose rate is the files it looked at
    (ior's too) over its time. (looked at, found)"""
    tops = [root / "mdtest-easy" / f"rank{rank}"]
    tops += [root / "mdtest-hard", root / "ior-easy", root / "ior-hard"] if rank == 0 else []
    count, found, todo = 0, 0, [str(t) for t in tops]
    while todo:
        looked, matched, subdirs = scanner.scan(todo.pop())
        count, found = count + looked, found + matched
        todo += subdirs
    return count, found


def work(spec: dict, phase: str, root: Path, rank: int, nprocs: int, start_at: float, items: int) -> dict:
    """One process's share of a phase: set up (buffers, names), wait for the common start, then its items; a write
    stops at the stonewall (if any), posts how far it got and writes on to the furthest (wear-out); durable with
    its flush. Set up before the start, so that no process starts its clock while another still sets up; each
    process bound to a CPU of its own (where there are as many), as mpirun binds IO500's ranks."""
    p = spec["io500"]["processes"]
    cpu = {"cpu": pin_to_cpu(rank % p, p)}
    if phase == "find":
        scanner = finder(timestamp(root).stat().st_mtime_ns)
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.time()
        count, found = _find(root, rank, scanner)
        t1 = time.time()
        return {
            "rank": rank,
            "items": count,
            "found": found,
            "bytes": 0,
            "start": t0,
            "end": t1,
            "end_durable": t1,
        } | cpu
    open_, run, close, state = _ops(spec, phase, root, rank, nprocs)
    if phase.startswith("mdtest-"):
        # The way to the phase's folder is walked before the start, as mdtest's access(testdir) is before its
        # timer: after a cache drop, that walk (through the root disk's /var/tmp, say) is no file's metadata.
        os.stat(root)
    time.sleep(max(0.0, start_at - time.time()))
    write = phase in ph.WRITES
    stonewall = spec["io500"].get("stonewall-time") if write else None
    t0, mono0 = time.time(), time.monotonic_ns()
    open_()
    done, stopped = 0, None
    if stonewall:
        done = stopped = run(0, items, mono0 + round(stonewall * 1e9))
        target = ph.wear_out(_post_and_wait(root / ".sync" / phase, rank, nprocs, done), items)
    else:
        target = items
    done += run(done, target, 0)
    t1 = time.time()
    close(write)
    t2 = time.time()
    record = {"rank": rank, "items": done, "bytes": done * item_bytes(spec, phase), "start": t0, "end": t1}
    record |= ({"latency": state["latency"].as_record()} if "latency" in state else {}) | cpu
    return record | {"end_durable": t2} | ({"at_stonewall": stopped} if stonewall else {}) | _whose(spec, phase, rank)


def _whose(spec: dict, phase: str, rank: int) -> dict:
    """Whose data a process read, stat'ed or deleted (io.read_from): the rank and the host that wrote it."""
    if phase in ph.WRITES or phase == "find":
        return {}
    p, hosts = spec["io500"]["processes"], spec["hosts"]
    other = ph.partner(rank, p * len(hosts), ph.read_shift(p, len(hosts), spec["read_from"]))
    return {"of_rank": other, "of_host": hosts[other // p]}


def _worker(args, results):
    try:
        results.put(work(*args))
    except BaseException as e:  # noqa: BLE001 (the parent reports it; a worker must always answer)
        results.put({"rank": args[3], "error": f"{type(e).__name__}: {e}"})


def part(spec: dict, phase: str, start_at, host_index: int, items: int, record_path) -> dict:
    """This host's processes in one phase (ranks host_index × processes ...): caches dropped first where the
    phase reads (and how cold the files it reads then are, measured), all forked, all started at start_at(), asked
    once this host is ready (every host's part at the start line, fsbench.toolkit.barrier)."""
    root = Path(spec["root"])
    p = spec["io500"]["processes"]
    nprocs = p * len(spec["hosts"])
    ranks = range(host_index * p, (host_index + 1) * p)
    found = {"host": short_hostname(), "hostname": short_hostname(), "phase": phase}
    if phase in ph.COLD:
        cache.drop_cache([])
        found["cold"] = "sync; echo 3 > /proc/sys/vm/drop_caches"
        found["cached_before"] = _cached(spec, phase, root, ranks, nprocs, items)
    load_loops()  # once, before the fork: no process loads the library after the cache drop, on its own
    start = start_at()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    args = [(spec, phase, root, r, nprocs, start, items) for r in ranks]
    workers = [ctx.Process(target=_worker, args=(a, results)) for a in args]
    for w in workers:
        w.start()
    try:
        got = [results.get() for _ in workers]
    finally:
        for w in workers:
            w.join()
    failed = [g for g in got if "error" in g]
    if failed:
        raise Io500Error(f"{phase} failed in {len(failed)} of {p} process(es) on {found['host']}: {failed[0]['error']}")
    found["processes"] = sorted(got, key=lambda g: g["rank"])
    write_json(record_path, found)
    return found


def _cached(spec: dict, phase: str, root: Path, ranks, nprocs: int, items: int) -> float | None:
    """The share of the bytes this host's ior read is about to read that sit in the page cache (mincore): the
    proof the read is cold. None for the metadata phases (their inodes and entries have no such measure)."""
    if not phase.startswith("ior-") or phase.endswith("write"):
        return None
    t = item_bytes(spec, phase)
    if phase.startswith("ior-hard"):
        return cache.resident_fraction(str(root / "ior-hard" / "file"), items * nprocs * t)
    shift = ph.read_shift(spec["io500"]["processes"], len(spec["hosts"]), spec["read_from"])
    files = [easy_file(root, ph.partner(r, nprocs, shift)) for r in ranks]
    return sum(cache.resident_fraction(str(f), items * t) for f in files) / len(files)


def part_main(spec_file: str, phase: str, start_line: str, items: str, record_dir: str) -> None:
    """`python -m fsbench io500-part`: this host's share, started by launch on every host; its processes start
    LOCAL_DELAY after every host's part is at the start line (the launcher's port), time to fork them."""
    spec = json.loads(Path(spec_file).read_text())
    index = spec["hosts"].index(short_hostname())
    start_at = lambda: barrier.wait(start_line) + LOCAL_DELAY  # noqa: E731
    part(spec, phase, start_at, index, int(items), Path(record_dir) / f"{short_hostname()}-{phase}.json")


def read_part(record_dir: Path, host: str, phase: str) -> dict:
    return read_json(record_dir / f"{host}-{phase}.json")
