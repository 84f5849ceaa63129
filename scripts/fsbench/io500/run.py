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
import queue
import shlex
import shutil
import struct
import time
from pathlib import Path

from fsbench.cluster.hosts import short_hostname
from fsbench.engines.loops import FileLoop, IorLoop, Scanner, ShortTransfer, WrongSize
from fsbench.engines.loops import load as load_loops
from fsbench.io500 import phases as ph
from fsbench.storage import cache
from fsbench.storage.devices import DeviceError
from fsbench.toolkit import barrier
from fsbench.toolkit.records import read_json, write_json
from fsbench.toolkit.system import pin_to_cpu
from fsbench.toolkit.system import run as run_cmd

_libc = ctypes.CDLL(None, use_errno=True)
POLL_S = 0.005  # how often a process that reached the stonewall looks for the others' counts
# How long after the stonewall a rank waits for the others' counts: each posts once its item in flight is done.
WAIT_MARGIN_S = 60.0
FAILED = ".failed"  # a rank's post that it failed, under .sync/<phase>/
DROP_TIMEOUT_S = 600  # the most drop-caches-cmd may take
STAMP = struct.Struct("<qq")  # the writer's rank and the offset, at the start of every ior transfer
LOCAL_DELAY = 0.2  # seconds from forking this host's processes to their start


class Io500Error(DeviceError):
    """A phase that could not run as IO500 defines it (a short read, a file missing)."""


class PeerFailed(Io500Error):
    """Another rank failed: this one stops too (the phase's error is that rank's, not this one's)."""


def layout(root: Path) -> dict[str, Path]:
    return {k: root / k for k in ("ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard", ".sync")}


def md_folder(root: Path, family: str, rank: int = 0) -> Path:
    """Where mdtest puts a rank's files as io500 runs it: mdtest-easy (-u) in a tree of the rank's own,
    test-dir.0-0/mdtest_tree.<rank>.0, mdtest-hard in one shared, test-dir.0-0/mdtest_tree.0. The depth is part
    of the measurement: every call on a file resolves its path (io500 method 8)."""
    return root / family / "test-dir.0-0" / (f"mdtest_tree.{rank}.0" if family == "mdtest-easy" else "mdtest_tree.0")


def _md_folders(root: Path, family: str, nprocs: int) -> None:
    for r in range(nprocs) if family == "mdtest-easy" else [0]:
        md_folder(root, family, r).mkdir(parents=True)


def prepare(root: Path, nprocs: int) -> None:
    """The folders of every phase, made afresh (what an interrupted run left goes), untimed as IO500's are."""
    shutil.rmtree(root, ignore_errors=True)
    dirs = layout(root)
    for d in dirs.values():
        d.mkdir(parents=True)
    for family in ("mdtest-easy", "mdtest-hard"):
        _md_folders(root, family, nprocs)
    (dirs["ior-hard"] / "file").touch()


def sync_dir(root: Path, phase: str) -> Path:
    """Where a stonewalled write's ranks post their counts (and failures)."""
    return root / ".sync" / phase


def fresh(root: Path, phase: str, nprocs: int) -> None:
    """Before a stonewalled phase: its .sync folder emptied, so that no rank reads a post of an earlier attempt;
    before an mdtest write, its folders emptied too (a rerun after a failed attempt makes its files anew)."""
    shutil.rmtree(sync_dir(root, phase), ignore_errors=True)
    sync_dir(root, phase).mkdir(parents=True)
    family = ph.BY_NAME[phase].family
    if ph.BY_NAME[phase].write and family.startswith("mdtest"):
        shutil.rmtree(root / family)
        _md_folders(root, family, nprocs)


def timestamp(root: Path) -> Path:
    return root / ".timestamp"


def easy_file(root: Path, rank: int) -> Path:
    return root / "ior-easy" / f"file.{rank}"


def limit_of(spec: dict, phase: str) -> int:
    """Items per process a phase moves at most: transfers, segments or files (ior-rnd4K-easy-read: io500's
    segment count, 4 KiB reads at random places until the stonewall)."""
    io500, family = spec["io500"], ph.BY_NAME[phase].family
    if phase == "ior-rnd4K-easy-read":
        return ph.RND4K_SEGMENTS
    return {
        "ior-easy": io500["ior-easy"]["blockSize"] // io500["ior-easy"]["transferSize"],
        "ior-hard": io500["ior-hard"]["segmentCount"],
        "mdtest-easy": io500["mdtest-easy"]["n"],
        "mdtest-hard": io500["mdtest-hard"]["n"],
    }[family]


def item_bytes(spec: dict, phase: str) -> int:
    """Bytes per item: what an ior figure counts (an mdtest figure counts the items)."""
    p = ph.BY_NAME[phase]
    if phase == "ior-rnd4K-easy-read":
        return ph.RND4K_BYTES
    if p.family == "ior-easy":
        return spec["io500"]["ior-easy"]["transferSize"]
    if p.family == "ior-hard":
        return ph.IOR_HARD_TRANSFER
    return ph.MDTEST_HARD_BYTES if p.family == "mdtest-hard" and p.op in ("write", "read") else 0


def _syncfs(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), f"syncfs of {path}")
    finally:
        os.close(fd)


def _post_and_wait(sync: Path, rank: int, nprocs: int, done: int, deadline: float) -> list[int]:
    """Post how many items this rank made by the stonewall; wait until every rank (of every host) has, until a rank
    posts that it failed, or until `deadline` (time.monotonic()): a wait never outlasts its phase."""
    tmp = sync / f".{rank}.tmp"
    tmp.write_text(str(done))
    tmp.rename(sync / str(rank))
    while True:
        names = [n for n in os.listdir(sync) if not n.startswith(".")]
        if failed := sorted(n for n in names if n.endswith(FAILED)):
            raise PeerFailed((sync / failed[0]).read_text().strip())
        if len(names) >= nprocs:
            return [int((sync / n).read_text()) for n in names]
        if time.monotonic() > deadline:
            missing = sorted(set(range(nprocs)) - {int(n) for n in names})
            raise Io500Error(
                f"rank(s) {missing} posted no count by the stonewall's deadline ({WAIT_MARGIN_S:g} s after it)"
            )
        time.sleep(POLL_S)


def _post_failure(sync: Path, rank: int, line: str) -> None:
    """Tell every rank waiting at the stonewall (on any host: the target is shared) that this one failed."""
    if sync.is_dir():
        tmp = sync / f".{rank}.failed.tmp"
        tmp.write_text(line)
        tmp.rename(sync / f"{rank}{FAILED}")


def _ops(spec: dict, phase: str, root: Path, rank: int, nprocs: int, items: int):
    """(open, run(first, last, deadline_ns), close(durable), state) of one process in one phase: what it does
    around its items, and its items first..last-1, none started at or after deadline_ns (CLOCK_MONOTONIC; 0:
    none), which returns how many it did. Every ior transfer written begins with its writer's rank and its offset
    (STAMP) over the rank's packet (dataPacketType); a read that checks (Phase.verify) counts each transfer that
    differs in `state["errors"]`, the first in `state["first_error"]`. The mdtest phases' items are loops.c's
    file loop, timed per file into `state["latency"]`."""
    p = ph.BY_NAME[phase]
    shift = ph.read_shift(phase, spec["io500"]["processes"], len(spec["hosts"]), spec["read_from"])
    whose = rank if p.write else ph.partner(rank, nprocs, shift)
    packet = spec["io500"].get("dataPacketType", "timestamp")
    state = {"errors": 0, "first_error": None}
    t = item_bytes(spec, phase)
    if p.kind == "ior":
        base, stride = 0, t
        if p.family == "ior-easy":
            path = easy_file(root, whose)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC if p.write else os.O_RDONLY
        else:
            path = root / "ior-hard" / "file"
            flags = os.O_WRONLY if p.write else os.O_RDONLY
            base = ph.ior_hard_offset(whose, 0, nprocs)
            stride = ph.ior_hard_offset(whose, 1, nprocs) - base
        stamps = ph.timestamp_words(whose) if packet == "timestamp" else None
        body = ph.packet(packet, whose, t)

        def start():
            state["fd"] = os.open(path, flags, 0o644)
            st = os.fstat(state["fd"])
            state["opened"] = {"path": str(path), "inode": st.st_ino}
            blocks = 0
            if phase == "ior-rnd4K-easy-read":  # as IOR's -z -z: random 4 KiB blocks of the file as it is, with
                blocks = st.st_size // t  # replacement (a block may be read again), its size read before the clock
                if not blocks:
                    raise Io500Error(f"{path} holds no {t}-byte block to read")
            state["loop"] = IorLoop(
                state["fd"], p.write, whose, body, base, stride, verify=p.verify, timestamp=stamps,
                blocks=blocks, seed=rank,
            )  # fmt: skip

        def run(first, last, deadline_ns):
            loop = state["loop"]
            try:
                return loop.run(first, last, deadline_ns)
            except ShortTransfer as e:
                if p.write:
                    raise Io500Error(f"{phase}: short write to {path}") from None
                why = f"short read of {path} at {e.offset} (rank {rank} reads rank {whose}'s)"
                raise Io500Error(f"{phase}: {why}") from None
            finally:
                state["errors"] = loop.bad
                if loop.bad and state["first_error"] is None:
                    i = loop.first_bad
                    state["first_error"] = _where_wrong(path, loop.offset(i), loop.first_bad_read, loop.expected(i))

        def end(durable):
            if durable:
                os.fsync(state["fd"])
            os.close(state["fd"])

        return start, run, end, state
    folder = md_folder(root, p.family, whose)
    name = ph.mdtest_name(whose, "{i}")
    size = item_bytes(spec, phase)
    data = ph.packet(packet, whose, size)
    # each mdtest-hard file's first 8 bytes are its writer's stamp and its number: what -X checks
    files = FileLoop(
        {"write": "create", "read": "mdtest-read"}.get(p.op, p.op), folder, name, count=0, file_size=size, data=data,
        stamp_base=ph.file_stamp(whose, 0) if size else None, expect=data if p.verify and size else None,
        timestamp=ph.timestamp_words(whose) if packet == "timestamp" else None,
    )  # fmt: skip
    state["latency"] = files.hist

    def start():
        first = files.path(0)
        if p.op != "write" and os.path.exists(first):
            state["opened"] = {"path": first, "inode": os.stat(first).st_ino}

    def run(first, last, deadline_ns):
        try:
            return files.run(first, last, deadline_ns)
        except WrongSize as e:
            raise Io500Error(f"{phase}: {e}") from None

    def end(durable):
        if p.write and os.path.exists(files.path(0)):
            state["opened"] = {"path": files.path(0), "inode": os.stat(files.path(0)).st_ino}
        state["errors"], state["first_error"] = files.bad, files.path(files.first_bad) if files.bad else None
        if durable:
            _syncfs(root)

    return start, run, end, state


def _where_wrong(path: Path, offset: int, got: bytes, expect: bytes) -> str:
    """Where a transfer read back other than what was written: the file, its offset, whose stamp it bears."""
    rank, at = STAMP.unpack_from(got, 0)
    first = next(i for i, (x, y) in enumerate(zip(got, expect, strict=True)) if x != y)
    return f"{path} at offset {offset} (byte {first} of the transfer; it says rank {rank}, offset {at})"


def finder(phase: str, newer_ns: int) -> Scanner:
    """The scanner of a find phase (set up before the start line: its buffer and the library's load are no walk):
    io500's find and find-hard `-newer timestampfile -size 3901c -name *01*`, find-easy `-name *01*` (mdtest-easy's
    files are empty and older than nothing: a name that matches is found)."""
    if phase == "find-easy":
        return Scanner(ph.FIND_NAME, 0, 0)
    return Scanner(ph.FIND_NAME, ph.MDTEST_HARD_BYTES, newer_ns)


def _find(phase: str, root: Path, rank: int, scanner: Scanner) -> tuple[int, int]:
    """fsbench's walker: this rank's share of the names, a directory at a time in C (loops.c's fsb_scan): its own
    easy directory (find, find-easy); rank 0 also the shared hard directory (find, find-hard) and the ior folders
    (find). A file whose name matches FIND_NAME is stat'ed and found as `scanner` (finder()) says; the others are
    only counted. Like IO500's pfind, whose rate is the files it looked at over its time. (looked at, found)"""
    tops = [md_folder(root, "mdtest-easy", rank)] if phase in ("find", "find-easy") else []
    if rank == 0:
        tops += [root / "mdtest-hard"] if phase in ("find", "find-hard") else []
        tops += [root / "ior-easy", root / "ior-hard"] if phase == "find" else []
    count, found, todo = 0, 0, [str(t) for t in tops]
    while todo:
        looked, matched, subdirs = scanner.scan(todo.pop())
        count, found = count + looked, found + matched
        todo += subdirs
    return count, found


def work(spec: dict, phase: str, root: Path, rank: int, nprocs: int, start_at: float, items: int) -> dict:
    """One process's share of a phase: set up (buffers, names), wait for the common start, then its items; a
    stonewalled phase stops at the stonewall (if any), posts how far it got and goes on to the furthest
    (wear-out); a write durable with its flush. Set up before the start, so that no process starts its clock
    while another still sets up; each process bound to a CPU of its own (where there are as many), as mpirun
    binds IO500's ranks. What it opened (path and inode) is recorded, and the data checks' errors."""
    p = spec["io500"]["processes"]
    cpu = {"cpu": pin_to_cpu(rank % p, p)}
    kind = ph.BY_NAME[phase]
    if kind.kind == "find":
        scanner = finder(phase, timestamp(root).stat().st_mtime_ns)
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.time()
        count, found = _find(phase, root, rank, scanner)
        t1 = time.time()
        return {"rank": rank, "items": count, "found": found, "bytes": 0, "start": t0, "end": t1, "end_durable": t1}
    open_, run, close, state = _ops(spec, phase, root, rank, nprocs, items)
    if kind.kind == "mdtest":
        # The way to the phase's folder is walked before the start, as mdtest's access(testdir) is before its
        # timer: after a cache drop, that walk (through the root disk's /var/tmp, say) is no file's metadata.
        os.stat(root)
    time.sleep(max(0.0, start_at - time.time()))
    stonewall = spec["io500"]["stonewall-time"] if kind.stonewalled else 0
    t0, mono0 = time.time(), time.monotonic_ns()
    open_()
    done, stopped = 0, None
    if stonewall:
        done = stopped = run(0, items, mono0 + round(stonewall * 1e9))
        deadline = mono0 / 1e9 + stonewall + WAIT_MARGIN_S
        target = ph.wear_out(_post_and_wait(sync_dir(root, phase), rank, nprocs, done, deadline), items)
    else:
        target = items
    done += run(done, target, 0)
    t1 = time.time()
    close(kind.write)
    t2 = time.time()
    record = {"rank": rank, "items": done, "bytes": done * item_bytes(spec, phase), "start": t0, "end": t1}
    record |= {"latency": state["latency"].as_record()} if "latency" in state else {}
    record |= {k: state[k] for k in ("opened",) if k in state}
    record |= {"errors": state["errors"], "first_error": state["first_error"]} if kind.verify else {}
    return record | cpu | {"end_durable": t2} | ({"at_stonewall": stopped} if stonewall else {})


def _worker(args, results):
    spec, phase, root, rank = args[:4]
    try:
        results.put(work(*args))
    except PeerFailed as e:
        results.put({"rank": rank, "error": str(e), "peer": True})
    except BaseException as e:  # noqa: BLE001 (the parent reports it; a worker must always answer)
        line = f"host {short_hostname()} rank {rank}: {type(e).__name__}: {e}"
        _post_failure(sync_dir(root, phase), rank, line)
        results.put({"rank": rank, "error": line})


def part(spec: dict, phase: str, start_at, host_index: int, items: int, record_path) -> dict:
    """This host's processes in one phase (ranks host_index × processes ...): caches dropped first where the
    phase reads (and how cold the files it reads then are, measured), all forked, all started at start_at(), asked
    once this host is ready (every host's part at the start line, fsbench.toolkit.barrier). The first process that
    fails ends the phase at once: the others are stopped, and the error names its host and rank in one line."""
    root = Path(spec["root"])
    p = spec["io500"]["processes"]
    nprocs = p * len(spec["hosts"])
    ranks = range(host_index * p, (host_index + 1) * p)
    found = {"host": short_hostname(), "hostname": short_hostname(), "phase": phase}
    if spec["io500"]["drop-caches"]:  # before every phase, as io500's main.c (the timestamp runs no part)
        found["cold"] = drop_caches(spec["io500"].get("drop-caches-cmd"))
    found["cached_before"] = _cached(spec, phase, root, ranks, nprocs, items)
    load_loops()  # once, before the fork: no process loads the library after the cache drop, on its own
    start = start_at()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    workers = {
        r: ctx.Process(target=_worker, args=((spec, phase, root, r, nprocs, start, items), results)) for r in ranks
    }
    for w in workers.values():
        w.start()
    try:
        got = _collect(workers, results, root, phase)
    finally:
        for w in workers.values():
            if w.is_alive():
                w.kill()
            w.join()
    failed = [g for g in got if "error" in g]
    if failed:
        first = min(failed, key=lambda g: g.get("peer", False))  # a rank that failed, before those it stopped
        raise Io500Error(f"io500 {phase} failed: {first['error']}")
    found["processes"] = sorted(got, key=lambda g: g["rank"])
    write_json(record_path, found)
    return found


def _collect(workers: dict, results, root: Path, phase: str) -> list[dict]:
    """Every worker's answer; at the first failure (an error answered, or a worker gone without one) what is in
    hand, the others left to be stopped."""
    got = {}
    while len(got) < len(workers):
        try:
            g = results.get(timeout=0.1)
        except queue.Empty:
            gone = [r for r, w in workers.items() if r not in got and w.exitcode not in (None, 0)]
            if not gone:
                continue
            line = f"host {short_hostname()} rank {gone[0]}: ended by exit code {workers[gone[0]].exitcode}"
            _post_failure(sync_dir(root, phase), gone[0], line)
            return [*got.values(), {"rank": gone[0], "error": line}]
        got[g["rank"]] = g
        if "error" in g:
            return list(got.values())
    return list(got.values())


def drop_caches(argv: list[str] | None) -> str:
    """io500's drop-caches: its drop-caches-cmd (an argument list, no shell), or fsbench's own (sync, then
    drop_caches) when none is given. What ran, for the record."""
    if argv:
        run_cmd(argv, timeout=DROP_TIMEOUT_S)
        return shlex.join(argv)
    cache.drop_cache([])
    return "sync; echo 3 > /proc/sys/vm/drop_caches"


def _cached(spec: dict, phase: str, root: Path, ranks, nprocs: int, items: int) -> float | None:
    """The share of the bytes this host's ior read is about to read that sit in the page cache (mincore): how
    cold it began. None for the other phases (an inode or an entry has no such measure)."""
    p = ph.BY_NAME[phase]
    if p.kind != "ior" or p.write:
        return None
    t = item_bytes(spec, p.made_by)
    if p.family == "ior-hard":
        return cache.resident_fraction(str(root / "ior-hard" / "file"), items * nprocs * t)
    shift = ph.read_shift(phase, spec["io500"]["processes"], len(spec["hosts"]), spec["read_from"])
    files = [easy_file(root, ph.partner(r, nprocs, shift)) for r in ranks]
    # each file as it is: ior-rnd4K-easy-read's items are draws anywhere in it, not a length
    return sum(cache.resident_fraction(str(f), f.stat().st_size) for f in files) / len(files)


def part_main(spec_file: str, phase: str, start_line: str, items: str, record_dir: str) -> None:
    """`python -m fsbench io500-part`: this host's share, started by launch on every host; its processes start
    LOCAL_DELAY after every host's part is at the start line (the launcher's port), time to fork them."""
    spec = json.loads(Path(spec_file).read_text())
    index = spec["hosts"].index(short_hostname())
    start_at = lambda: barrier.wait(start_line) + LOCAL_DELAY  # noqa: E731
    part(spec, phase, start_at, index, int(items), Path(record_dir) / f"{short_hostname()}-{phase}.json")


def read_part(record_dir: Path, host: str, phase: str) -> dict:
    return read_json(record_dir / f"{host}-{phase}.json")
