"""The metadata workload (mdtest-like): many small files created, stat'ed, read and deleted, each phase timed.

Each stream is a worker process of its own (mdtest's unique-directory mode: stream s works in its own tree
<root>/stream<s>/d<k>/), so that streams run in parallel, not one at a time behind Python's GIL. All streams of a
phase start together (a barrier) and the phase's figure is every stream's files over the time from the first
start to the last end, as for block I/O (fsbench.engines.job.aggregate). Per file, one latency: the open, write (fsync)
and close of a create, the stat, the open, read and close of a read, the unlink of a delete.

fsync (when a create is durable): `none` (the page cache holds the files; the figure is the kernel's), `file`
(each file fsync'ed before its close, in its latency), `end` (the default: one syncfs(2) of the filesystem per
stream after its last file, inside the create's durable time, as a write's flush is). The directories are made
before the create and removed after the delete, untimed, as mdtest's tree phases are apart from its file phases.
"""

import ctypes
import errno
import multiprocessing
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from fsbench.engines import verify as verifying
from fsbench.engines.job import aggregate
from fsbench.engines.loops import FileLoop, WrongSize
from fsbench.engines.loops import load as load_loops
from fsbench.storage.devices import DeviceError
from fsbench.toolkit.system import pin_to_cpu

METADATA_PHASES = ("create", "stat", "read", "delete")
# What a file costs a filesystem beyond its data, at most, for the space check: an inode, a directory entry.
PER_FILE_OVERHEAD = 4096
BLOCK = 4096
CHECKED = ", its bytes checked after its time (io.verify)"


def mdtest_name(rank: int, i: int | str) -> str:
    """A process's file i, named as mdtest names it (this metadata test's and io500's mdtest phases'): on ext4 the
    names' shape moved the create rate by 15 % and more, their order in the directory's hash (metadata and io500
    method 4, engines.table). With i "{i}", the pattern fsbench.engines.loops.FileLoop fills in."""
    return f"file.mdtest.{rank}.{i}"


def space_needed(files: int, file_size: int) -> int:
    """Bytes `files` files take at most: each rounded up to whole 4 KiB blocks, plus an inode and an entry."""
    return files * (-(-file_size // BLOCK) * BLOCK + PER_FILE_OVERHEAD)


_libc = ctypes.CDLL(None, use_errno=True)


class MetadataError(DeviceError):
    """A phase could not finish: the filesystem ran out of space or inodes, or a file was not as made."""


@dataclass(frozen=True)
class MetaJob:
    """Every stream makes `files` files of `file_size` bytes in `dirs` directories of its own tree under `root`."""

    root: str
    streams: int
    files: int
    file_size: int
    dirs: int
    fsync: str = "end"
    data: str = "random"
    # io.verify: a signature (fsbench.engines.verify) each stream's files' bytes are drawn from, which the read
    # checks them against after each file's time (mdtest -X); 0: not verified
    verify: int = 0

    def file_data(self, stream: int) -> bytes:
        """What stream's creates write (before each file's stamp): random bytes, the same again for its reader
        when verified."""
        if self.verify:
            return verifying.pool(self.verify + stream, self.file_size)
        return os.urandom(self.file_size) if self.data == "random" else b""

    def tree(self, stream: int) -> Path:
        return Path(self.root) / f"stream{stream}"

    def where(self, stream: int) -> tuple[str, str]:
        """Where stream's files are: its tree, and their names under it: file i in d{i % dirs}, named as mdtest
        names it (as fsbench.engines.loops.FileLoop makes it)."""
        return str(self.tree(stream)), f"d{{d}}/{mdtest_name(stream, '{i}')}"

    def path(self, stream: int, i: int) -> str:
        return str(self.tree(stream) / f"d{i % self.dirs}" / mdtest_name(stream, i))

    @property
    def total_files(self) -> int:
        return self.streams * self.files

    def space_needed(self) -> int:
        return space_needed(self.total_files, self.file_size)

    def describe(self) -> str:
        sync = {"none": "no fsync", "file": "fsync per file", "end": "syncfs at the end"}[self.fsync]
        return (
            f"python metadata: {self.streams} stream(s) × {self.files} files of {self.file_size} B in "
            f"{self.dirs} dir(s) each ({sync}), in C (loops.c); create = open(O_CREAT|O_EXCL), write, close; "
            f"stat = stat; read = open, read whole, close{CHECKED if self.verify else ''}; "
            f"delete = unlink; under {self.root}"
        )


def check_room(job: MetaJob) -> None:
    """Refuse before the first file when the filesystem has too few free inodes or too little space."""
    st = os.statvfs(job.root)
    need_inodes = job.total_files + job.streams * (job.dirs + 1)
    # f_files is 0 where inodes are made on demand (btrfs): no fixed table to run out of.
    if st.f_files and st.f_favail < need_inodes:
        raise MetadataError(
            f"not enough free inodes under {job.root}: the metadata test needs {need_inodes} "
            f"({job.streams} stream(s) × ({job.files} files + {job.dirs + 1} dirs)), {st.f_favail} are free of "
            f"{st.f_files}; make the filesystem with more (mkfs.ext4 -N or -i, not -T largefile4), "
            "or metadata.files smaller"
        )
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
    if job.space_needed() > free:
        raise MetadataError(
            f"not enough space under {job.root}: the metadata test needs up to {job.space_needed()} bytes, "
            f"{free} are free; make more room or metadata.files or file_size smaller"
        )


def _syncfs(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e), path)
    finally:
        os.close(fd)


def _phase(job: MetaJob, phase: str, stream: int, ready=lambda: None) -> dict:
    """One stream's share of one phase; its own latencies, and when it began and ended (epoch seconds).
    `ready()` is called once its files and data are set up, just before its clock starts: the start line all
    streams wait at, so that none starts while another still sets up (mdtest's barrier). The files
    are moved by loops.c's file loop (fsbench.engines.loops.FileLoop): Python's own per-file cost held the
    stat phase to ~0.6 of mdtest's on 2 busy cores."""
    if phase not in METADATA_PHASES:
        raise ValueError(f"unknown phase {phase!r}; allowed: {', '.join(METADATA_PHASES)}")
    random = job.data == "random"
    files = FileLoop(
        phase,
        *job.where(stream),
        job.files,
        job.dirs,
        job.file_size,
        data=job.file_data(stream) if phase == "create" else b"",
        stamp_base=stream * job.files if random else None,  # each file's number: no two alike
        fsync_each=job.fsync == "file",
        expect=job.file_data(stream) if job.verify and phase == "read" else None,
    )
    # The way to the trees is walked before the start, as mdtest's access(testdir) is before its timer: after a
    # cache drop, that walk (through the root disk's /var/tmp, say) is no file's metadata.
    os.stat(job.root)
    ready()
    anchor = time.time() - time.perf_counter()
    start = anchor + time.perf_counter()
    try:
        files.run()
    except WrongSize as e:
        raise MetadataError(str(e)) from None
    checks = files.check_ns / 1e9  # a verified read's checks (io.verify): outside every file's time, and the phase's
    end = anchor + time.perf_counter() - checks
    if phase == "create" and job.fsync == "end":
        _syncfs(job.root)
    end_durable = anchor + time.perf_counter() - checks
    checked = {}
    if job.verify and phase == "read":
        bad = files.bad
        found = f"file {files.path(files.first_bad)} not as made" if bad else ""
        checked = {"bad_blocks": bad, "first_bad_offset": float("nan"), "first_bad_found": found}
        checked = {"verify": checked | {"seconds": checks}}
    return checked | {
        "path": str(job.tree(stream)),
        "bytes": files.moved,
        "ops": job.files,
        "start": start,
        "end": end,
        "end_durable": end_durable,
        "latency": files.hist.as_record(),
    }


def _worker(job: MetaJob, phase: str, stream: int, start_line, results) -> None:
    try:
        cpu = pin_to_cpu(stream, job.streams)  # as mpirun binds mdtest's ranks
        results.put((stream, _phase(job, phase, stream, start_line.wait) | {"cpu": cpu}))
    except OSError as e:
        results.put((stream, {"error": e.errno, "message": str(e)}))
    except BaseException as e:  # noqa: BLE001 (the parent reports it; a worker must always answer)
        results.put((stream, {"error": None, "message": f"{type(e).__name__}: {e}"}))


def run_phase(job: MetaJob, phase: str) -> dict:
    """One phase on every stream at once (a process each), as one figure (fsbench.engines.job.aggregate)."""
    load_loops()  # once, before the fork: no worker loads the library after a cache drop, on its own
    ctx = multiprocessing.get_context("fork")
    start_line, results = ctx.Barrier(job.streams), ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(job, phase, s, start_line, results)) for s in range(job.streams)]
    for w in workers:
        w.start()
    try:
        found = dict(results.get() for _ in workers)
    finally:
        for w in workers:
            w.join()
    failed = [r for r in found.values() if "error" in r]
    if failed:
        first = failed[0]
        full = first["error"] in (errno.ENOSPC, errno.EDQUOT)
        why = "the filesystem ran out of space or inodes: " if full else ""
        raise MetadataError(f"{phase} failed in {len(failed)} of {job.streams} stream(s): {why}{first['message']}")
    streams = [found[s] for s in range(job.streams)]
    return aggregate(streams, job.describe()) | verifying.columns(streams)


def make_trees(job: MetaJob) -> None:
    remove_trees(job)
    for s in range(job.streams):
        for d in range(job.dirs):
            (job.tree(s) / f"d{d}").mkdir(parents=True)


def remove_trees(job: MetaJob) -> None:
    for s in range(job.streams):
        shutil.rmtree(job.tree(s), ignore_errors=True)


def run(job: MetaJob, make_cold) -> dict:
    """Every phase in order, the cache made cold (`make_cold()`, which says how) before stat and before read.
    Returns {phase: figure} and how the cache was made cold; on any failure the trees are removed first."""
    check_room(job)
    make_trees(job)
    try:
        out, cold = {}, {}
        for phase in METADATA_PHASES:
            if phase in ("stat", "read"):
                cold[phase] = make_cold()
            out[phase] = run_phase(job, phase)
    finally:
        remove_trees(job)
    return {"phases": out, "cold": cold}
