"""The python engine's I/O loop and the metadata phases' file loop (loops.c): built once with the system's C
compiler, run through ctypes.

run(io) moves a stream's blocks as `IO` says and returns `Out`: operations, bytes, latency sums per kind (the
histograms it fills are latency.Histogram counters), and the width of the time series' bins it filled
(`Series`). FileLoop creates, stats, reads or deletes a list of files, each timed into a Histogram (the metadata
engine's and io500's mdtest phases). `make setup` builds the library into _build/ beside this
file; where it has not, the first measurement builds it into a cache folder outside the source tree (the source
may be read-only, e.g. installed on a cluster), $FSBENCH_CACHE or ~/.cache/fsbench. Either is named by a hash of
the source, so a changed loops.c is rebuilt, and parallel builds (Snakemake jobs, Slurm nodes on a shared
filesystem) each write their own file and rename it into place. Warnings do not fail a build (a newer compiler's
new warning must not stop a measurement); the test suite builds it with -Werror.
"""

import ctypes
import hashlib
import os
import shutil
import struct
import subprocess
import threading
from pathlib import Path

from fsbench.toolkit.latency import SUB_BITS, Histogram

SOURCE = Path(__file__).with_name("loops.c")
BUILD = Path(__file__).with_name("_build")  # make setup's
CFLAGS = ["-O2", "-Wall", "-Wextra", "-shared", "-fPIC"]


def cache_dir() -> Path:
    """Where a first measurement builds the library when make setup has not."""
    return Path(os.environ.get("FSBENCH_CACHE") or Path.home() / ".cache" / "fsbench")


# Tests only: when set, the loop's clock starts at 0 and advances this many ns at every read (not the real
# clock), so a time-based run ends after an exact number of calls.
CLOCK_STEP_NS = 0


class IO(ctypes.Structure):
    """struct fsb_io of loops.c: what to do."""

    _p = ctypes.c_void_p
    _fields_ = [
        ("offsets", _p),
        ("reads", _p),
        ("read_buffers", _p),
        ("write_buffers", _p),
        ("counts", _p * 2),
        ("done", _p),
        ("series", _p * 4),  # [kind][bytes, ops]: writes' bytes, writes' ops, reads' bytes, reads' ops
        ("series_len", ctypes.c_int64),
        ("series_ns", ctypes.c_int64),
        ("count", ctypes.c_int64),
        ("block_size", ctypes.c_int64),
        ("write_turns", ctypes.c_int64),
        ("stamp_every", ctypes.c_int64),
        ("deadline_ns", ctypes.c_int64),
        ("clock_step_ns", ctypes.c_int64),
        ("fd", ctypes.c_int32),
        ("depth", ctypes.c_int32),
        ("read_all", ctypes.c_int32),
        ("strict", ctypes.c_int32),
        ("repeat", ctypes.c_int32),
        ("ring_fd", ctypes.c_int32),
        ("sq_head", _p),
        ("sq_tail", _p),
        ("sq_mask", _p),
        ("sq_array", _p),
        ("sqes", _p),
        ("cq_head", _p),
        ("cq_tail", _p),
        ("cq_mask", _p),
        ("cqes", _p),
        ("verify", ctypes.c_int64),
    ]


class Out(ctypes.Structure):
    """struct fsb_out of loops.c: what happened; index 0 of each pair is the writes, 1 the reads."""

    _fields_ = [
        ("ops", ctypes.c_int64 * 2),
        ("total_ns", ctypes.c_int64 * 2),
        ("longest_ns", ctypes.c_int64 * 2),
        ("moved", ctypes.c_int64 * 2),
        ("error_offset", ctypes.c_int64),
        ("short_result", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("error_read", ctypes.c_int32),
        ("enter_failed", ctypes.c_int32),
        ("series_ns", ctypes.c_int64),
        ("series_used", ctypes.c_int64),
        ("bad_blocks", ctypes.c_int64),
        ("bad_block", ctypes.c_int64),
        ("first_bad", ctypes.c_int64),
        ("bad_bits", ctypes.c_int64),
        ("found", ctypes.c_int64 * 4),
        ("check_ns", ctypes.c_int64),
        ("bad_zero", ctypes.c_int32),
        ("pad", ctypes.c_int32),
    ]


class Files(ctypes.Structure):
    """struct fsb_files of loops.c: what to do to a list of files."""

    _p = ctypes.c_void_p
    _fields_ = [
        ("pattern", _p),
        ("dirs", ctypes.c_int64),
        ("data", _p),
        ("counts", _p),
        ("first", ctypes.c_int64),
        ("last", ctypes.c_int64),
        ("file_size", ctypes.c_int64),
        ("stamp_base", ctypes.c_int64),
        ("deadline_ns", ctypes.c_int64),
        ("op", ctypes.c_int32),
        ("stamp", ctypes.c_int32),
        ("fsync_each", ctypes.c_int32),
        ("verify", ctypes.c_int32),
        ("expect", _p),
        ("hi", ctypes.c_uint64),
        ("low", ctypes.c_uint64),
        ("kind", ctypes.c_int64),
    ]


class FilesOut(ctypes.Structure):
    """struct fsb_files_out of loops.c: what happened."""

    _fields_ = [
        ("done", ctypes.c_int64),
        ("total_ns", ctypes.c_int64),
        ("longest_ns", ctypes.c_int64),
        ("moved", ctypes.c_int64),
        ("short_result", ctypes.c_int64),
        ("error", ctypes.c_int32),
        ("pad", ctypes.c_int32),
        ("bad", ctypes.c_int64),
        ("first_bad", ctypes.c_int64),
        ("check_ns", ctypes.c_int64),
    ]


class Ior(ctypes.Structure):
    """struct fsb_ior of loops.c: one process's transfers in an IO500 ior phase."""

    _fields_ = [
        *((name, ctypes.c_void_p) for name in ("buf", "expect", "first_bad_copy")),
        *((name, ctypes.c_int64) for name in ("first", "last", "transfer", "base", "stride", "deadline_ns", "rank")),
        ("blocks", ctypes.c_int64),
        *((name, ctypes.c_uint64) for name in ("hi", "low", "seed")),
        *((name, ctypes.c_int32) for name in ("fd", "write", "verify", "kind")),
    ]


class IorOut(ctypes.Structure):
    """struct fsb_ior_out of loops.c: what happened."""

    _fields_ = [
        *((name, ctypes.c_int64) for name in ("done", "moved", "short_result", "bad", "first_bad")),
        ("error", ctypes.c_int32),
        ("pad", ctypes.c_int32),
    ]


class ScanOut(ctypes.Structure):
    """struct fsb_scan_out of loops.c: what one directory held."""

    _fields_ = [("looked", ctypes.c_int64), ("found", ctypes.c_int64), ("dirs_len", ctypes.c_int64)]


def _name(flags: list[str]) -> str:
    return f"loops-{hashlib.sha256(SOURCE.read_bytes() + ' '.join(flags).encode()).hexdigest()[:16]}.so"


def build(into: Path | None = None, extra: tuple[str, ...] = ()) -> Path:
    """The built library: make setup's (in BUILD), or one built now into `into` (default: the cache folder)."""
    flags = [*CFLAGS, *extra]
    for folder in [into] if into else [BUILD, cache_dir()]:
        if (folder / _name(flags)).exists():
            return folder / _name(flags)
    folder = into or cache_dir()
    lib = folder / _name(flags)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError(
            f"fsbench's python engine runs its I/O loop in C ({SOURCE.name}) and needs a C compiler to build it "
            "once: install one (Debian: apt-get install gcc) or set CC"
        )
    folder.mkdir(parents=True, exist_ok=True)
    part = lib.with_name(f"{lib.name}.{os.getpid()}.{threading.get_ident()}.part")
    proc = subprocess.run([cc, *flags, "-o", str(part), str(SOURCE)], capture_output=True, text=True)
    if proc.returncode != 0:
        part.unlink(missing_ok=True)
        raise RuntimeError(f"building {SOURCE} with {cc} failed:\n{proc.stderr.strip()}")
    os.replace(part, lib)
    if folder == BUILD:  # this checkout's own: earlier versions go (a process using one keeps its mapping)
        for old in folder.glob("loops-*.so"):
            if old != lib:
                old.unlink(missing_ok=True)
    # The cache folder is shared by every checkout (and node) of this user: other versions stay, each in use
    # somewhere (they are a few dozen KiB).
    return lib


_lib = None
_loading = threading.Lock()  # a part's streams are threads that each load it: one builds, the others wait


def load() -> ctypes.CDLL:
    """The library, built if need be and loaded once per process."""
    global _lib
    with _loading:
        if _lib is None:
            lib = ctypes.CDLL(str(build()))
            lib.fsb_run.argtypes = [ctypes.POINTER(IO), ctypes.POINTER(Out)]
            if lib.fsb_sub_bits() != SUB_BITS:
                raise RuntimeError(
                    f"{SOURCE.name} buckets latencies with SUB_BITS {lib.fsb_sub_bits()}, not {SUB_BITS}"
                )
            lib.fsb_files.argtypes = [ctypes.POINTER(Files), ctypes.POINTER(FilesOut)]
            lib.fsb_ior.argtypes = [ctypes.POINTER(Ior), ctypes.POINTER(IorOut)]
            lib.fsb_ior_offset.argtypes, lib.fsb_ior_offset.restype = (
                [ctypes.POINTER(Ior), ctypes.c_int64],
                ctypes.c_int64,
            )
            c = ctypes
            lib.fsb_scan.argtypes = [c.c_char_p, c.c_char_p, c.c_int64, c.c_int64, c.c_void_p, c.c_int64, c.c_void_p]
            sizes = (IO, lib.fsb_sizeof_io), (Out, lib.fsb_sizeof_out), (Files, lib.fsb_sizeof_files)
            outs = (FilesOut, lib.fsb_sizeof_files_out), (ScanOut, lib.fsb_sizeof_scan_out)
            outs += (Ior, lib.fsb_sizeof_ior), (IorOut, lib.fsb_sizeof_ior_out)
            for struct, size in (*sizes, *outs):
                size.restype = ctypes.c_int64
                if size() != ctypes.sizeof(struct):
                    raise RuntimeError(
                        f"{SOURCE.name}'s struct {struct.__doc__.split()[1]} is {size()} bytes, its ctypes mirror "
                        f"{struct.__name__} {ctypes.sizeof(struct)}: make them agree field for field"
                    )
            _lib = lib
    return _lib


# The time series: SERIES_BINS bins per kind, the first SERIES_NS wide (10x wider after each fold, in C): runs up to
# SERIES_BINS ms are kept per ms, up to 10x longer per 10 ms, and so on; what a record keeps is binned coarser.
SERIES_BINS = 2000
SERIES_NS = 10**6


class Series:
    """The bins loops.c fills for one stream: bytes and operations completed per bin, writes and reads apart."""

    def __init__(self, bins: int | None = None):
        self.bins = bins or SERIES_BINS
        self.values = [(ctypes.c_int64 * self.bins)() for _ in range(4)]

    def attach(self, io: IO) -> None:
        for i, v in enumerate(self.values):
            io.series[i] = ctypes.addressof(v)
        io.series_len, io.series_ns = self.bins, SERIES_NS

    def of(self, out: Out, kind: int) -> tuple[float, list[int], list[int]]:
        """Bin width (s), bytes and operations of kind 0 (writes) or 1 (reads), up to the last bin used."""
        used = out.series_used
        return out.series_ns / 1e9, list(self.values[2 * kind][:used]), list(self.values[2 * kind + 1][:used])


def run(io: IO) -> Out:
    """Move the blocks (the GIL is released meanwhile); errors come back in Out, for the caller to name."""
    out = Out()
    load().fsb_run(ctypes.byref(io), ctypes.byref(out))
    return out


FILE_OPS = ("create", "stat", "read", "delete", "mdtest-read")  # loops.c's op numbers, in order


class WrongSize(Exception):
    """A read found other than the bytes the file was made with."""

    def __init__(self, path: str, found: int, size: int):
        super().__init__(f"read {found} bytes of {path}, which was made with {size}")
        self.path, self.found, self.size = path, found, size


class FileLoop:
    """One process's files in one metadata phase, set up before its clock starts, so that run() does nothing per
    file but make its name, the calls, the clock read and the histogram's counter.

    File i is `folder`/`name` with {i} in name the file's number and {d} i % dirs (e.g. "d{d}/f{i}"): made in C
    from a pattern, not a list, as IO500's stonewalled phases give each process millions of names it may not use.
    create: open(O_CREAT|O_EXCL, 0644), write `data` (file_size bytes; with `stamp_base` each file's first 8
    bytes become stamp_base + i, little-endian here), fsync if `fsync_each`, close. stat: stat(2). read: open,
    one read of file_size + 1 bytes (it must find file_size), close; with `expect` (what the create's `data` was)
    its bytes are checked after the file's time too, as mdtest -X does, word by word (`timestamp`: (hi, low) of a
    timestamp packet, whose words are made as IOR's check makes them) (`bad` files, the lowest `first_bad`, the
    checks' `check_ns`). delete: unlink. mdtest-read: a read as mdtest calls it (io500's mdtest-hard-read), opened
    O_RDWR and seeked to 0 first."""

    def __init__(
        self, op: str, folder: str, name: str, count: int, dirs: int = 1, file_size: int = 0, data: bytes = b"",
        stamp_base=None, fsync_each=False, expect: bytes | None = None, timestamp: tuple[int, int] | None = None,
    ):  # fmt: skip
        if op not in FILE_OPS:
            raise ValueError(f"unknown file operation {op!r}; allowed: {', '.join(FILE_OPS)}")
        self.folder, self.name, self.count, self.dirs, self.hist = str(folder), name, count, dirs, Histogram()
        pattern = os.fsencode(self.folder).replace(b"%", b"%%") + b"/"
        pattern += os.fsencode(name.replace("%", "%%")).replace(b"{i}", b"%1$lld").replace(b"{d}", b"%2$lld")
        self._pattern = ctypes.create_string_buffer(pattern)
        self._buf = ctypes.create_string_buffer(bytes(data[:file_size]), file_size + 1)
        self._expect = ctypes.create_string_buffer(bytes(expect[:file_size]), file_size + 1) if expect else None
        self.spec = Files(
            pattern=ctypes.addressof(self._pattern),
            dirs=dirs,
            data=ctypes.addressof(self._buf),
            counts=self.hist.counts.buffer_info()[0],
            file_size=file_size,
            stamp_base=stamp_base or 0,
            op=FILE_OPS.index(op),
            stamp=stamp_base is not None and file_size >= 8,
            fsync_each=fsync_each,
            verify=expect is not None and op in ("read", "mdtest-read"),
            expect=ctypes.addressof(self._expect) if self._expect else None,
            hi=timestamp[0] if timestamp else 0,
            low=timestamp[1] if timestamp else 0,
            kind=0 if timestamp else 1,
        )
        self.moved = self.bad = self.check_ns = 0
        self.first_bad = -1
        load()

    def path(self, i: int) -> str:
        return f"{self.folder}/{self.name.format(i=i, d=i % self.dirs)}"

    def run(self, first: int = 0, last: int | None = None, deadline_ns: int = 0) -> int:
        """Files first.. up to last (default: count), none started at or after deadline_ns (CLOCK_MONOTONIC, as
        time.monotonic_ns(); 0: none); how many were done. A failing call raises OSError naming the file (the
        files before it are done and counted), a read of the wrong size WrongSize."""
        self.spec.first, self.spec.last = first, self.count if last is None else last
        self.spec.deadline_ns = deadline_ns
        out = FilesOut()
        load().fsb_files(ctypes.byref(self.spec), ctypes.byref(out))
        h = self.hist
        h.count, h.total_ns, h.max_ns = h.count + out.done, h.total_ns + out.total_ns, max(h.max_ns, out.longest_ns)
        self.moved += out.moved
        self.bad, self.check_ns = self.bad + out.bad, self.check_ns + out.check_ns
        if out.bad and self.first_bad < 0:
            self.first_bad = out.first_bad  # runs go up the files: an earlier run's is lower
        if out.error:
            path = self.path(first + out.done)
            if out.short_result >= 0:
                raise WrongSize(path, out.short_result, self.spec.file_size)
            raise OSError(out.error, os.strerror(out.error), path)
        return out.done


class IorLoop:
    """One process's transfers in one of IO500's ior phases (loops.c's fsb_ior), set up before its clock starts.

    Transfer i is at base + i * stride, or (`blocks`) at one of the file's first `blocks` blocks drawn at random
    with replacement from (`seed`, i), as IOR's -z -z draws ior-rnd4K-easy-read's. A write stamps each transfer's
    first 16 bytes with (rank, its offset) and writes `packet` after them; a read with `verify` checks each transfer
    against the stamp of `rank` (the writer it reads) and `packet`, as IOR -R does, every word made and compared
    (`timestamp`: (hi, low) when `packet` is a timestamp packet, whose words hi | low + w the check makes instead of
    reading them; else the packet itself): `bad` transfers, the first found at `first_bad`, as it was read in
    `first_bad_read`."""

    def __init__(
        self, fd: int, write: bool, rank: int, packet: bytes, base: int = 0, stride: int = 0,
        verify: bool = False, timestamp: tuple[int, int] | None = None, blocks: int = 0, seed: int = 0,
    ):  # fmt: skip
        self.transfer = len(packet)
        if self.transfer < 16:
            raise ValueError(f"a transfer of {self.transfer} bytes cannot hold its 16-byte stamp")
        self._buf = ctypes.create_string_buffer(bytes(packet), self.transfer)
        self._expect = ctypes.create_string_buffer(bytes(packet), self.transfer)
        self._bad = ctypes.create_string_buffer(self.transfer)
        hi, low = timestamp or (0, 0)
        self.spec = Ior(
            buf=ctypes.addressof(self._buf),
            expect=ctypes.addressof(self._expect),
            first_bad_copy=ctypes.addressof(self._bad),
            transfer=self.transfer, base=base, stride=stride, rank=rank, blocks=blocks, hi=hi, low=low, seed=seed,
            fd=fd, write=write, verify=verify and not write, kind=0 if timestamp else 1,
        )  # fmt: skip
        self.moved = self.bad = 0
        self.first_bad, self.first_bad_read = -1, b""
        load()

    def offset(self, i: int) -> int:
        return load().fsb_ior_offset(ctypes.byref(self.spec), i)

    def expected(self, i: int) -> bytes:
        """What transfer i should hold: the writer's stamp and packet."""
        return struct.pack("<qq", self.spec.rank, self.offset(i)) + self._expect.raw[16:]

    def run(self, first: int, last: int, deadline_ns: int = 0) -> int:
        """Transfers first.. up to last, none started at or after deadline_ns (CLOCK_MONOTONIC; 0: none); how
        many were done. A failing call raises OSError, a short transfer ShortTransfer (those before are done)."""
        self.spec.first, self.spec.last, self.spec.deadline_ns = first, last, deadline_ns
        out = IorOut()
        load().fsb_ior(ctypes.byref(self.spec), ctypes.byref(out))
        self.moved += out.moved
        if out.bad and self.first_bad < 0:
            self.first_bad, self.first_bad_read = out.first_bad, self._bad.raw
        self.bad += out.bad
        if out.error:
            at = self.offset(first + out.done)
            if out.short_result >= 0:
                raise ShortTransfer(at, out.short_result, self.transfer)
            raise OSError(out.error, f"{os.strerror(out.error)} at offset {at}")
        return out.done


class ShortTransfer(Exception):
    """A transfer that moved fewer bytes than asked (a read past the end of what was written)."""

    def __init__(self, offset: int, moved: int, transfer: int):
        super().__init__(f"at offset {offset}: {moved} of {transfer} bytes")
        self.offset, self.moved = offset, moved


class Scanner:
    """IO500's find, one directory at a time (loops.c's fsb_scan): regular files looked at, those whose names match
    `pattern` (fnmatch) lstat'ed and found when they hold `size` bytes and are newer than `newer_ns`."""

    def __init__(self, pattern: str, size: int, newer_ns: int, dirs_cap: int = 1 << 20):
        self.pattern, self.size, self.newer_ns = os.fsencode(pattern), size, newer_ns
        self._dirs = ctypes.create_string_buffer(dirs_cap)
        load()

    def scan(self, path: str) -> tuple[int, int, list[str]]:
        """(looked at, found, the subdirectories' paths) of one directory."""
        out = ScanOut()
        err = load().fsb_scan(
            os.fsencode(path), self.pattern, self.size, self.newer_ns, self._dirs, len(self._dirs), ctypes.byref(out)
        )
        if err:
            raise OSError(err, os.strerror(err), path)
        names = self._dirs.raw[: out.dirs_len].split(b"\0")[:-1]
        return out.looked, out.found, [os.path.join(path, os.fsdecode(n)) for n in names]
