"""The cells of a campaign: what is measured where (host, array, target), which test, which repeat, and how a
cell is spelled in its path (and read back from a job's wildcards). Pure: a validated campaign in, cells out."""

import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from fsbench.storage.filesystems import FILESYSTEMS
from fsbench.toolkit.sizes import format_size, parse_size

# Filesystems that span several devices themselves (no md in between).
# Patterns that read and write in one run (io.rwmix_read of the operations read).
MIXED = {"randrw", "rw"}


def spans_members(array: dict) -> bool:
    """Members used side by side by the filesystem itself (no md in between)."""
    return array["kind"] == "loop" and array["members"] > 1 and array.get("level") is None


# The host segment of a cell when the campaign names no hosts: wherever the job runs.
LOCAL = "local"
# The host segment of a path array's cells that every host runs at once (all_hosts: true).
ALL_HOSTS = "all"
# With config clients, one such segment per point of the scaling axis: all<hosts>x<processes per host>, e.g. all2x1,
# the first 2 hosts of `hosts` with 1 process (an all-hosts cell's streams, io500's processes) on each.
CLIENTS_RE = re.compile(r"all(?P<hosts>[1-9]\d*)x(?P<processes>[1-9]\d*)")


def is_all_hosts(host: str) -> bool:
    """Whether a cell's host segment names several hosts at once: all, or a clients point."""
    return host == ALL_HOSTS or CLIENTS_RE.fullmatch(host) is not None


def clients_point(host: str) -> tuple[int, int] | None:
    """(hosts, processes per host) of a clients point's segment; None for any other."""
    m = CLIENTS_RE.fullmatch(host)
    return (int(m["hosts"]), int(m["processes"])) if m else None


def all_hosts_segments(config: dict) -> list[str]:
    """The host segments of the cells every host runs at once: all, or with clients one per point (hosts, then
    processes, in the order given)."""
    clients = config.get("clients")
    if not clients:
        return [ALL_HOSTS]
    return [f"all{h}x{p}" for h in clients["hosts"] for p in clients["processes"]]


def cell_hosts(config: dict, host: str) -> list[str]:
    """The hosts whose parts make up an all-hosts cell: a clients point's first ones, else all of `hosts`."""
    point = clients_point(host)
    return config["hosts"][: point[0]] if point else config["hosts"]


def array_dir(scratch: str, campaign: str, array: str, host: str = LOCAL) -> Path:
    """Where an array's images and mount point live: <scratch>/<campaign>/<array>, and <array>.<host> when
    the campaign names hosts, so that a scratch directory (or a path array) shared by several nodes never
    mixes their loop images or data."""
    return Path(scratch) / campaign / (array if host == LOCAL else f"{array}.{host}")


def measuring_hosts(config: dict) -> list[str]:
    """The hosts a campaign's cells are measured on: its named `hosts`, or this one (local)."""
    return config["hosts"] or [LOCAL]


def repeat_plan(io: dict) -> dict:
    """{min, max, target_ci, decide}: every cell gets min repeats, adaptive ones up to max while their CI is wider
    than target_ci (None: not asked) or, with decide, while a comparison they are part of is open."""
    r = io["repeats"]
    if isinstance(r, dict):
        return {"min": r["min"], "max": r["max"], "target_ci": r.get("target_ci"), "decide": r["decide"]}
    return {"min": r, "max": r, "target_ci": None, "decide": False}


# How a cell's test is spelled in its path, e.g. seq-1MiB-buffered-1s, rand-4KiB-direct-1s-qd32 (the queue
# depth only above 1, so that paths of depth-1 cells read as they always did); one regex reads it back.
TEST_PATTERN = (
    r"(?P<pattern>seq|randrw|rand|rw)-(?P<bs>\d+(?:B|KiB|MiB|GiB|TiB|PiB))-(?P<io>buffered|direct)-(?P<streams>\d+)s"
    r"(?:-qd(?P<iodepth>[1-9]\d*))?(?:-(?P<shared>shared))?"
)
TEST_RE = re.compile(TEST_PATTERN)


@dataclass(frozen=True)
class _Placed:
    """Where a cell is measured. Its folder under runs/ (and state/, logs/) is host/array/target/test; the repeat
    is below it."""

    host: str
    array: str
    target: str

    @property
    def path(self) -> str:
        return f"{self.host}/{self.array}/{self.target}/{self.test}"


@dataclass(frozen=True)
class Cell(_Placed):
    """One measurement: a write and the read of what it wrote, on one host, array and target, in one repeat."""

    pattern: str
    block_size: int
    direct: bool
    streams: int
    rep: int
    iodepth: int = 1
    shared_file: bool = False

    @property
    def test(self) -> str:
        io = "direct" if self.direct else "buffered"
        depth = f"-qd{self.iodepth}" if self.iodepth > 1 else ""
        shared = "-shared" if self.shared_file else ""
        return f"{self.pattern}-{format_size(self.block_size)}-{io}-{self.streams}s{depth}{shared}"

    @classmethod
    def from_wildcards(cls, host: str, array: str, target: str, test: str, rep) -> "Cell":
        """The cell a job's wildcards name (rules/common.smk), the inverse of `path` and `rep`."""
        m = _matched(TEST_RE, test, "a test", TEST_PATTERN)
        return cls(
            host,
            array,
            target,
            m["pattern"],
            parse_size(m["bs"]),
            m["io"] == "direct",
            int(m["streams"]),
            int(rep),
            int(m["iodepth"] or 1),
            m["shared"] is not None,
        )


def targets(config: dict, array: str) -> list[str]:
    """What is measured on an array, in order: the bare array first, then each filesystem.

    A path array is measured as it is ('path'); members that a filesystem spans itself have no
    single bare device, and only spanning filesystems can use them.
    """
    spec = config["arrays"][array]
    if spec["kind"] == "path":
        return ["path"]
    if spans_members(spec):
        return [name for name, fs in config["filesystems"].items() if FILESYSTEMS[fs["type"]].spans_devices]
    return (["raw"] if config["raw"] else []) + list(config["filesystems"])


def all_targets(config: dict) -> list[str]:
    """Every target of any array, in the order they are measured."""
    found = {t for array in config["arrays"] for t in targets(config, array)}
    return [t for t in ["raw", *config["filesystems"], "path"] if t in found]


# A metadata cell's test, e.g. meta-20000f-4KiB-10d-end-1s: files per stream, file size, dirs, fsync, streams.
META_PATTERN = (
    r"meta-(?P<files>[1-9]\d*)f-(?P<file_size>\d+(?:B|KiB|MiB|GiB|TiB|PiB))-(?P<dirs>[1-9]\d*)d-"
    r"(?P<fsync>none|file|end)-(?P<streams>[1-9]\d*)s"
)
META_RE = re.compile(META_PATTERN)


@dataclass(frozen=True)
class MetaCell(_Placed):
    """One metadata measurement (fsbench.engines.metadata): create, stat, read and delete of many small files, on one
    host, array and filesystem target (or path), in one repeat."""

    files: int
    file_size: int
    dirs: int
    fsync: str
    streams: int
    rep: int

    @property
    def test(self) -> str:
        return f"meta-{self.files}f-{format_size(self.file_size)}-{self.dirs}d-{self.fsync}-{self.streams}s"

    @classmethod
    def from_wildcards(cls, host: str, array: str, target: str, test: str, rep) -> "MetaCell":
        m = _matched(META_RE, test, "a metadata test", META_PATTERN)
        size = 0 if m["file_size"] == "0B" else parse_size(m["file_size"])  # 0B: empty files
        return cls(host, array, target, int(m["files"]), size, int(m["dirs"]), m["fsync"], int(m["streams"]), int(rep))


def _matched(regex, test: str, what: str, allowed: str) -> re.Match:
    """The test segment of a job's wildcards, parsed; ValueError naming what is allowed."""
    m = regex.fullmatch(test)
    if m is None:
        raise ValueError(f"not {what}: {test!r}; allowed: {allowed}")
    return m


def is_metadata(test: str) -> bool:
    return test.startswith("meta-")


def meta_tests(config: dict) -> list[tuple]:
    """The metadata test's settings per stream count, as (files, file_size, dirs, fsync, streams); none without
    a metadata block."""
    meta = config["metadata"]
    if meta is None:
        return []
    return [(meta["files"], meta["file_size"], meta["dirs"], meta["fsync"], s) for s in config["io"]["streams"]]


def io_tests(config: dict, host: str = LOCAL) -> list:
    """The block I/O tests of the campaign (on `host`: a clients point's streams are its processes): none in an
    io500 campaign without an io: section (it measures only what it names)."""
    return tests(config["io"], host) if config.get("io_cells", True) else []


def cells(config: dict):
    """Every cell of the planned repeats (all of a fixed count, the minimum of an adaptive one): each host's,
    then those that all hosts run at once (path arrays with all_hosts); then the metadata cells of every
    filesystem target and path array (not raw: a bare device has no files), this host's only."""
    io = config["io"]
    where = [(h, a, t) for h in measuring_hosts(config) for a in config["arrays"] for t in targets(config, a)]
    all_hosts = [a for a, spec in config["arrays"].items() if spec.get("all_hosts")]
    where += [(seg, a, "path") for seg in all_hosts_segments(config) for a in all_hosts]
    for host, array, target in where:
        for rep in range(1, repeat_plan(io)["min"] + 1):
            for bs, pattern, direct, streams, iodepth, shared in io_tests(config, host):
                yield Cell(host, array, target, pattern, bs, direct, streams, rep, iodepth, shared)
            if not is_all_hosts(host) and target != "raw":
                for files, size, dirs, fsync, streams in meta_tests(config):
                    yield MetaCell(host, array, target, files, size, dirs, fsync, streams, rep)


# The test segment of an IO500 cell's path: its twelve phases are its steps (rules/io500.smk).
IO500_TEST = "io500"


def io500_places(config: dict) -> list[tuple[str, str, str]]:
    """Where IO500's phases run, as (host, array, target): a path array from every host at once (all, with hosts;
    else this host), each filesystem target on each host's own array. Never raw: the phases make files."""
    if config["io500"] is None:
        return []
    found = []
    for array, spec in config["arrays"].items():
        if spec["kind"] == "path":
            found += [(seg, array, "path") for seg in (all_hosts_segments(config) if config["hosts"] else [LOCAL])]
        else:
            found += [(h, array, t) for h in measuring_hosts(config) for t in targets(config, array) if t != "raw"]
    return found


def tests(io: dict, host: str = LOCAL) -> list[tuple]:
    """Every combination of the io axes, as (block_size, pattern, direct, streams, iodepth, shared_file); a clients
    point's streams are its processes per host."""
    point = clients_point(host)
    axes = ("block_sizes", "patterns", "direct", "streams", "iodepth", "shared_file")
    return list(itertools.product(*([point[1]] if point and a == "streams" else io[a] for a in axes)))


def fingerprint(*parts) -> str:
    """A short stable digest of settings, to tell whether a device holds what the config asks."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class CellSpec:
    """One cell and repeat as its steps get it: the Snakemake params (plan.Plan.cell_spec, device_spec) made
    into a frozen value at each step script's boundary, so that a misspelt or missing setting fails there, once.

    The place and storage are always there; the test is there for a measurement (block I/O, or the metadata
    test's with workload "metadata"), not for mkfs and mount. An all-hosts shared-file cell also carries where
    its hosts meet (shared_dir, hosts, slots) and, on one host, that host's first slot (slot_base).
    """

    campaign: str
    host: str
    array: str
    target: str
    fs_type: str
    test: str
    rep: int
    array_spec: dict
    fs: dict | None
    workdir: str
    # block I/O
    pattern: str | None = None
    block_size: int | None = None
    direct: bool | None = None
    streams: int | None = None
    iodepth: int | None = None
    shared_file: bool | None = None
    rwmix_read: int | None = None
    runtime: float | None = None
    size: int | None = None
    data: str | None = None
    verify: bool | None = None  # io.verify, where true
    engine: str | None = None
    buffer: str | None = None  # io.buffer hugepage, where set (4 KiB pages otherwise)
    method: int | None = None
    cache: str | None = None
    # the time series: its interval, and what judges it (io.log_interval, io.drop, io.steady; only where set)
    log_interval: float | None = None
    drop: float | None = None
    steady: dict | None = None
    # the metadata test
    workload: str | None = None
    files: int | None = None
    file_size: int | None = None
    dirs: int | None = None
    fsync: str | None = None
    meta_cache: str | None = None  # metadata.cache, where the campaign sets it: cold or warm
    # IO500's phases (config io500, bytes), and which process's data each reads (io.read_from)
    io500: dict | None = None
    read_from: str | None = None
    # an all-hosts shared-file cell
    shared_dir: str | None = None
    hosts: tuple[str, ...] | None = None
    slots: int | None = None
    slot_base: int | None = None

    ALWAYS = ("campaign", "host", "array", "target", "fs_type", "test", "rep", "array_spec", "fs", "workdir")

    @classmethod
    def from_params(cls, params: dict) -> "CellSpec":
        unknown = set(params) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"cell settings fsbench does not know: {', '.join(sorted(unknown))}")
        return cls(**{k: tuple(v) if k == "hosts" else v for k, v in params.items()})

    def as_record(self) -> dict:
        """The params it was made from, as records keep them (a setting that was not given stays out)."""
        found = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {k: list(v) if k == "hosts" else v for k, v in found.items() if k in self.ALWAYS or v is not None}

    def describe(self, step: str) -> str:
        """How a step's message names its cell: 'mkfs of demo/ext4/seq-1MiB-buffered-1s rep 1'."""
        host = "" if self.host == LOCAL else f" on {self.host}"
        return f"{step} of {self.array}/{self.target}/{self.test} rep {self.rep}{host}"

    @property
    def shared_by_hosts(self) -> bool:
        return self.shared_dir is not None
