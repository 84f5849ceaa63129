"""IO500's phases, pure: their order and kinds, where each process's transfers go, the stonewall wear-out, the
score, and what makes a phase not valid for the list. Follows github.com/IO500/io500 (io500.sh, src/phase_*.c)."""

import array
import fnmatch
import math
import random
from dataclasses import dataclass

from fsbench.campaign import config
from fsbench.engines.metadata import mdtest_name


@dataclass(frozen=True)
class Phase:
    """One of io500's phases (src/phase_*.c, src/phase-definitions.h) as fsbench runs it.

    kind: ior, mdtest, find or dummy (timestamp: io500's IO500_PHASE_DUMMY). family: the files it acts on
    (ior-easy, ior-hard, mdtest-easy, mdtest-hard; "" for find and the timestamp). op: write, read, stat, delete,
    find, timestamp. group: its score group, BW or MD, "" where unscored (IO500_NO_SCORE). optional: run in
    extended mode only (IO500_PHASE_FLAG_OPTIONAL). made_by: the write phase whose items it acts on. shift: whose
    data a process acts on, as io500's arguments say it: ("node", k) IOR's -C -Q k (the tasks of k nodes on:
    k x processes per host, modulo all of them), ("rank", k) mdtest's -N k (k ranks on), None its own.
    verify: it checks the data it reads (ior -R, mdtest -X). stonewalled: it stops at stonewall-time and wears
    out (ior -D, mdtest -W). timed_write: io500 holds its runtime against the stonewall (verify_stonewall)."""

    name: str
    kind: str
    family: str
    op: str
    group: str
    optional: bool = False
    made_by: str = ""
    shift: tuple[str, int] | None = None
    verify: bool = False
    stonewalled: bool = False
    timed_write: bool = False
    since: int = 1  # the io500 method (engines.table.IO500_METHOD) that brought it in: older records lack it

    @property
    def unit(self) -> str:
        """io500's: GiB/s where the name starts with "i", else kIOPS (main.c)."""
        return "GiB/s" if self.name[0] == "i" else "kIOPS"

    @property
    def write(self) -> bool:
        return self.op == "write"


_NODE, _RANK = ("node", 1), ("rank", 1)
# In io500's run order (src/phase-definitions.h; mdworkbench's phases are not run by fsbench).
TABLE = (
    Phase("ior-easy-write", "ior", "ior-easy", "write", "BW", stonewalled=True, timed_write=True),
    Phase("mdtest-easy-write", "mdtest", "mdtest-easy", "write", "MD", stonewalled=True, timed_write=True),
    Phase("timestamp", "dummy", "", "timestamp", "", since=5),
    Phase("find-easy", "find", "mdtest-easy", "find", "MD", optional=True, since=5),
    Phase("ior-hard-write", "ior", "ior-hard", "write", "BW", stonewalled=True, timed_write=True),
    Phase("mdtest-hard-write", "mdtest", "mdtest-hard", "write", "MD", stonewalled=True, timed_write=True),
    Phase("find", "find", "", "find", "MD"),
    Phase("find-hard", "find", "mdtest-hard", "find", "MD", optional=True, since=5),
    Phase("ior-easy-read", "ior", "ior-easy", "read", "BW", made_by="ior-easy-write", shift=_NODE, verify=True),
    Phase("mdtest-easy-stat", "mdtest", "mdtest-easy", "stat", "MD", made_by="mdtest-easy-write", shift=_RANK),
    Phase("ior-hard-read", "ior", "ior-hard", "read", "BW", made_by="ior-hard-write", shift=_NODE, verify=True),
    Phase("mdtest-hard-stat", "mdtest", "mdtest-hard", "stat", "MD", made_by="mdtest-hard-write", shift=_RANK),
    Phase("mdtest-easy-delete", "mdtest", "mdtest-easy", "delete", "MD", made_by="mdtest-easy-write", shift=_RANK),
    Phase(
        "mdtest-hard-read", "mdtest", "mdtest-hard", "read", "MD", made_by="mdtest-hard-write", shift=_RANK, verify=True
    ),
    Phase("mdtest-hard-delete", "mdtest", "mdtest-hard", "delete", "MD", made_by="mdtest-hard-write", shift=_RANK),
    # 4 KiB reads at random places of ior-easy's files, -C -Q 2, stopped at the stonewall; ior-easy's files go after
    Phase(
        "ior-rnd4K-easy-read",
        "ior",
        "ior-easy",
        "read",
        "",
        made_by="ior-easy-write",
        shift=("node", 2),
        stonewalled=True,
        since=5,
    ),
)
BY_NAME = {p.name: p for p in TABLE}
MODES = ("standard", "extended")


def order(mode: str = "standard") -> tuple[str, ...]:
    """The phases a run of `mode` runs, in io500's order."""
    return tuple(p.name for p in TABLE if mode == "extended" or not p.optional)


def measured(mode: str, method: int) -> tuple[str, ...]:
    """The phases a cell of io500 method `method` measured (a finished cell kept by methods: recorded)."""
    return tuple(p for p in order(mode) if BY_NAME[p].since <= method)


PHASES = order("standard")
WRITES = tuple(p.name for p in TABLE if p.write)
RND4K_BYTES = 4096  # ior-rnd4K-easy-read's transfers
RND4K_SEGMENTS = 10_000_000  # and their most per process (io500's -s): the stonewall ends it first

# Fixed by the list: bytes per transfer of ior-hard, bytes of each mdtest-hard file (the campaign's space check
# needs them too).
IOR_HARD_TRANSFER = config.IOR_HARD_TRANSFER
MDTEST_HARD_BYTES = config.MDTEST_HARD_BYTES
LIST_STONEWALL = 300  # seconds a write phase must run for the list
GIB = 2**30


# IO500's find (src/phase_find.c): files named like this, of mdtest-hard's size, newer than the run's timestamp
# file. Only a name that matches is stat'ed, so the figure is the walk plus those stats, as pfind's.
FIND_NAME = "*01*"


def find_matches(nprocs: int, hard_files: int) -> int:
    """How many files IO500's find must find: the mdtest-hard files whose names match (the only files of
    MDTEST_HARD_BYTES; mdtest-easy's are empty, the ior files far larger)."""
    return sum(fnmatch.fnmatchcase(mdtest_name(r, i), FIND_NAME) for r in range(nprocs) for i in range(hard_files))


PACKETS = ("timestamp", "offset", "incompressible", "random")  # io500's dataPacketType (IOR's -l)
SIGNATURE = 0x10500  # a timestamp packet's signature (io500 passes IOR a fixed one, -G): word w holds it plus w


def timestamp_words(rank: int) -> tuple[int, int]:
    """(hi, low) of `rank`'s timestamp packet, whose 8-byte word w is hi | (low + w): IOR's (generate_memory_pattern:
    its rank in the high half, its signature plus w in the low), with rank + 1 so that no word of rank 0 is small."""
    return (rank + 1) << 32, SIGNATURE


def packet(kind: str, rank: int, nbytes: int) -> bytes:
    """What `rank` writes in each transfer (or mdtest-hard file) under dataPacketType `kind`, before its stamp:
    timestamp: IOR's words (timestamp_words, as compressible as IOR's); offset: every word its offset in the
    transfer; incompressible, random: bytes of a generator seeded by the rank. A reader of another rank's data makes
    the same bytes to check it."""
    if kind == "timestamp":
        hi, low = timestamp_words(rank)
        words = array.array("Q", (hi | (low + w) for w in range(nbytes // 8 + 1))).tobytes()
    elif kind == "offset":
        words = array.array("Q", range(0, nbytes + 8, 8)).tobytes()
    else:
        words = random.Random(rank).randbytes(nbytes)
    return words[:nbytes]


def file_stamp(rank: int, i: int) -> int:
    """The first 8 bytes of `rank`'s i-th mdtest-hard file: who wrote it and which it is (mdtest -X checks it)."""
    return ((rank + 1) << 40) + i


def unit(phase: str) -> str:
    """A row's unit: a phase's (Phase.unit), GiB/s for bw, kIOPS for md, none for the score."""
    if phase in BY_NAME:
        return BY_NAME[phase].unit
    return {"bw": "GiB/s", "md": "kIOPS"}.get(phase, "")


def ior_hard_offset(rank: int, segment: int, nprocs: int) -> int:
    """Byte offset of `rank`'s transfer in `segment` of the shared file: segment by segment, each process's
    transfer after the ranks before it (IOR -s segmentCount -t 47008 -b 47008 on one file)."""
    return (segment * nprocs + rank) * IOR_HARD_TRANSFER


def read_shift(phase: str, processes: int, hosts: int, read_from: str) -> int:
    """How many ranks on the process whose data a process of `phase` acts on is, as io500's arguments say
    (Phase.shift): IOR -C -Q k the tasks of k hosts on (on one host: its own file), mdtest -N k the k-th rank on
    (on one host too); 0 its own. io.read_from: self makes every phase act on its own."""
    how = BY_NAME[phase].shift
    if read_from == "self" or how is None:
        return 0
    kind, k = how
    return (k * processes) % (processes * hosts) if kind == "node" else k


def partner(rank: int, nprocs: int, shift: int) -> int:
    """The rank whose data `rank` reads."""
    return (rank + shift) % nprocs


def wear_out(done: list[int], limit: int) -> int:
    """IOR's stoneWallingWearOut: after the stonewall every process writes on until it holds as many items as
    the furthest one had (never more than the phase's own limit)."""
    return min(max(done), limit)


@dataclass(frozen=True)
class Figure:
    phase: str
    value: float
    seconds: float
    valid: bool
    invalid_reasons: str


def value_of(phase: str, amount: float, seconds: float) -> float:
    """A phase's figure: GiB/s of the bytes for ior phases, kIOPS of the items for the others."""
    if seconds <= 0:
        return float("nan")
    return amount / GIB / seconds if BY_NAME[phase].kind == "ior" else amount / 1000 / seconds


def invalid(phase: str, seconds: float, value: float, stonewall: int, errors: int = 0, found: int = 1) -> list[str]:
    """Why io500 prints [INVALID] on this phase, in its words (src/main.c, phase_ior.c, phase_find.c): a write
    phase that ran under the stonewall or under the list's 300 s; a figure of 0; errors in IOR's data check
    (`errors`, mdtest-hard-read's too); a find that found nothing. stonewall-time 0 is no stonewall."""
    p = BY_NAME[phase]
    found_why = []
    if p.kind == "ior" and p.verify and errors:
        found_why.append(f"Errors ({errors}) occured during phase in IOR. This invalidates your run.")
    if p.kind == "mdtest" and p.verify and errors:
        found_why.append(f"Errors ({errors}) occured during phase in mdtest. This invalidates your run.")
    if p.kind == "ior" and p.write and seconds < stonewall:
        # it ended before the stonewall: IOR says it was hit at 0.0 s
        found_why.append(
            f"Write phase needed {seconds:f}s instead of stonewall {stonewall}s. Stonewall was hit at 0.0s"
        )
    if p.kind == "find" and not found:
        found_why.append("Find didn't find anything, this is likely invalid.")
    if p.timed_write and seconds < stonewall:
        found_why.append(f"Runtime of phase ({seconds:f}) is below stonewall time. This shouldn't happen!")
    elif p.kind != "dummy" and not value > 0:
        found_why.append("Resulting score shouldn't be 0.0")
    if p.timed_write and seconds < LIST_STONEWALL:
        found_why.append("Runtime is smaller than expected minimum runtime")
    return found_why


def figure_doubts(phase: str, seconds: float, stonewall: float | None, invalid_reasons: str) -> list[str]:
    """A record of io500 method 4 or before (one `invalid_reasons` for both): those that doubt the figure itself,
    without the list's rules of the time. Newer records keep them apart (`doubts`)."""
    rules = set()
    if phase in WRITES:
        rules.add(f"no stonewall-time: the list asks write phases of at least {LIST_STONEWALL} s")
        rules.add(f"stonewall-time {stonewall:g} s is under the list's {LIST_STONEWALL} s" if stonewall else "")
        rules.add(f"ran {seconds:.3g} s, under the list's {LIST_STONEWALL} s")
    return [r for r in (invalid_reasons or "").split("; ") if r and r not in rules]


def geomean(values: list[float]) -> float:
    if not values or any(not v > 0 for v in values):
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def score(figures: dict[str, Figure], extended: bool = False) -> list[Figure]:
    """io500's calc_score: bw and md the geometric means of their group's phases whose figure is above 0 (with
    `extended` the optional phases too), score = sqrt(bw x md), named score (or scorex). All three as valid as
    io500's [SCORE ] line: no phase it runs ([SCOREX]: none at all) invalid."""
    ran = [BY_NAME[name] for name in figures]
    bad = [p.name for p in ran if not figures[p.name].valid and (extended or not p.optional)]
    why = f"[INVALID]: {', '.join(bad)}" if bad else ""
    out = []
    for name, group in (("bw", "BW"), ("md", "MD")):
        parts = [figures[p.name] for p in ran if p.group == group and (extended or not p.optional)]
        counted = [f.value for f in parts if f.value > 0]
        out.append(Figure(name, geomean(counted) if counted else 0.0, sum(f.seconds for f in parts), not bad, why))
    bw, md = out
    out.append(
        Figure("scorex" if extended else "score", math.sqrt(bw.value * md.value), bw.seconds + md.seconds, not bad, why)
    )
    return out
